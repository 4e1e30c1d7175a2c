"""Secrets a command prints, pasted with the command: the value alone on the line after
it, which nothing on its own line names.

* commands whose output is a secret: ``heroku auth:token``, ``aws ecr
  get-login-password``, ``gcloud auth print-access-token``, ``gh auth token``, ``security
  find-generic-password ... -w``, ``pass show``, ``secret-tool lookup``, ``op read``,
  ``bw get password``, ``vault kv get -field=...``, ``openssl rand -hex 32``, ``rails
  secret``...; the first line after them;
* ``cat`` of a file whose name says it holds a secret (``master.key``,
  ``vault_pass.txt``, an OpenVPN ``auth.txt``, ``*.token``): its lines, up to the next
  prompt or blank line (a user name or an address among them stays);
* a line that names a secret and ends with a colon, or is only a secret's name
  (``Password``, as a browser's saved-password screen shows it), then the value alone
  on the next line.

The value must be one word: a line of words is the command's message, not its secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kenning.redact.lazy import lazy
from kenning.redact.named import _skip_value, password_shaped

Add = Callable[[tuple[int, int, str]], None]

# The commands, each found by a literal in the lower-cased bytes, then matched on its line.
_PRINTS = lazy(
    r"\bheroku[ \t]+auth:token\b"
    r"|\baws[ \t]+(?:ecr|ecr-public)[ \t]+get-login-password\b"
    r"|\baws[ \t]+codeartifact[ \t]+get-authorization-token\b.*--output[ \t]+text"
    r"|\bgcloud[ \t]+auth[ \t]+(?:application-default[ \t]+)?print-(?:access|identity)-token\b"
    r"|\b(?:gh|glab|doctl)[ \t]+auth[ \t]+token\b"
    r"|\bsecurity[ \t]+find-(?:generic|internet)-password\b.*[ \t]-w\b"
    r"|\b(?:go)?pass[ \t]+show[ \t]+\S+|\bsecret-tool[ \t]+lookup\b"
    r"|\bop[ \t]+read[ \t]|\bbw[ \t]+get[ \t]+(?:password|totp)\b"
    r"|\blpass[ \t]+show[ \t]+--password\b|\bkeyring[ \t]+get\b"
    r"|\bvault[ \t]+(?:kv[ \t]+get|read)[ \t].*-field[= ]|\bvault[ \t]+print[ \t]+token\b"
    r"|\bopenssl[ \t]+rand[ \t]+-(?:hex|base64)\b|\bpwgen\b|\bwg[ \t]+genkey[ \t]*$"
    r"|\b(?:bin/)?(?:rails|rake)[ \t]+secret\b|\bmix[ \t]+phx\.gen\.secret\b"
    r"|\bartisan[ \t]+key:generate[ \t]+--show\b|\bsecrets\.token_(?:hex|urlsafe)\b"
    r"|\bkubectl[ \t]+get[ \t]+secrets?\b.*\bbase64[ \t]+(?:-d|--decode|-D)\b"
    # an output whose name says it is a secret, printed raw
    r"|\bterraform[ \t]+output[ \t]+(?:-[\w=-]+[ \t]+)*-raw[ \t]+(?:-[\w=-]+[ \t]+)*"
    r"[\w.-]*(?:pass|secret|token|key|credential|pwd)[\w.-]*[ \t]*$"
    r"|\bpulumi[ \t]+stack[ \t]+output[ \t]+[\w.-]*(?:pass|secret|token|key|credential|pwd)"
    r"[\w.-]*[ \t]+--show-secrets\b"
    # a variable whose name says it is a secret, echoed or printed alone
    r"|\b(?:echo[ \t]+(?:-n[ \t]+)?[\"']?\$\{?|printenv[ \t]+)"
    r"(?![\w]*public)[\w]*(?:pass|passwd|password|secret|token|key|credentials?|pwd|passphrase)"
    r"\}?[\"']?[ \t]*$",
    re.IGNORECASE,
)
_PRINT_WORDS = (
    b"auth:token",
    b"get-login-password",
    b"get-authorization-token",
    b"print-access-token",
    b"print-identity-token",
    b"auth token",
    b"-password",
    b"pass show",
    b"secret-tool",
    b"op read",
    b"bw get",
    b"lpass",
    b"keyring",
    b"-field",
    b"print token",
    b"rand -",
    b"pwgen",
    b" secret",
    b"gen.secret",
    b"key:generate",
    b"secrets.token_",
    b"base64",
    b"output",
    b"echo ",
    b"printenv ",
)
# cat of a file whose name says it holds a secret (not a public key's .pub)
_CAT = lazy(
    r"\bcat[ \t]+(?P<f>[^\s|;&<>]*(?:pass|secret|token|credential|private|master\.key|\.key"
    r"|auth\.txt|\.pem)[^\s|;&<>/]*)[ \t]*$",
    re.IGNORECASE,
)
# A line that names a secret and ends with a colon, or is only the secret's name.
_LABEL = lazy(
    r"(?i:[^\r\n]*\b(?:password|passwort|passphrase|passcode|pin|api[ _-]?key|secret|token"
    r"|recovery[ \t]key|setup[ \t]key)\b[^\r\n]*:[ \t]*"
    r"|[ \t]*(?:password|passwort|passphrase|passcode|pin|secret|token|api[ _-]?key)[ \t]*)$"
)
_LABEL_WORDS = (b"pass", b"pin", b"key", b"secret", b"token")
_LABEL_NAMES = frozenset(
    (b"password", b"passwort", b"passphrase", b"passcode", b"pin", b"secret", b"token")
    + (b"api key", b"api_key", b"api-key", b"apikey")
)
_PROMPT = lazy(r"[ \t]*(?:\$|#|>|PS[ >]|[\w.@-]+[@:][^\s]*[$#%>])[ \t]", re.ASCII)
# a CLI's warning line before its output: heroku's " ›   Warning: ...", "WARNING: ..."
_WARNING = lazy(r"[ \t]*(?:\u203a|(?i:warning)[ \t]*:)", re.ASCII)
_WORD = lazy(r"[ \t]*(?P<v>[^\s]{6,512})[ \t]*\r?$")
# A credential file's user field before its secret: kenji:$apr1$..., deploy:Xy7...
_USER_FIELD = lazy(r"[ \t]*[A-Za-z_][\w.@-]{0,63}:(?=[^\s:])", re.ASCII)
_EMAIL = lazy(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.ASCII)
_KEYISH = lazy(r"[A-Za-z0-9+/=_.~-]{16,}", re.ASCII)


def printed(text: str, low: bytes, add: Add) -> None:
    """Add the values that the commands and labels above print on the next line."""
    if b"\n" not in low:
        return
    if any(word in low for word in _PRINT_WORDS):
        for start in _lines_with(text, low, _PRINT_WORDS):
            end = _line_end(text, start)
            m = _PRINTS.search(text, start, end)
            if m and not _piped_away(text, start, end):
                # what `echo $X` prints may be anything: only a value shaped as a secret
                _next_word(text, end, add, shaped=m.group().lower().startswith(("echo", "print")))
    if b"cat " in low:
        for start in _lines_with(text, low, (b"cat ",)):
            end = _line_end(text, start)
            if _CAT.search(text, start, end):
                _file_lines(text, end, add)
    if any(word in low for word in _LABEL_WORDS):
        for start in _lines_with(text, low, _LABEL_WORDS):
            end = _line_end(text, start)
            line = low[start:end].rstrip(b" \t\r")
            if not (line.endswith(b":") or line.strip() in _LABEL_NAMES):
                continue  # the common case: a line that does not end as a label does
            if end - start <= 200 and _LABEL.match(text, start, end):
                _next_word(text, end, add, shaped=True)


def _lines_with(text: str, low: bytes, words: tuple[bytes, ...]) -> list[int]:
    """Where the lines holding one of ``words`` start."""
    starts = set()
    for word in words:
        at = low.find(word)
        while at >= 0:
            starts.add(text.rfind("\n", max(0, at - 2000), at) + 1)
            end = text.find("\n", at)
            at = low.find(word, end) if end >= 0 else -1
    return sorted(starts)


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def _piped_away(text: str, start: int, end: int) -> bool:
    """Does the command's output go to the clipboard or a file, not the screen?"""
    line = text[start:end]
    return bool(re.search(r"\|[ \t]*(?:pbcopy|xclip|xsel|clip|wl-copy)\b|[^2&]>[ \t]*\S", line))


def _next_word(text: str, end: int, add: Add, *, shaped: bool) -> None:
    """The value alone on the line after ``end`` (a newline); ``shaped``: only one that
    can be nothing but a secret."""
    if end >= len(text):
        return
    start = end + 1
    line_end = _line_end(text, start)
    for _ in range(3):  # heroku's " ›   Warning: token will expire ..." comes first
        if not _WARNING.match(text, start, line_end) or line_end >= len(text):
            break
        start = line_end + 1
        line_end = _line_end(text, start)
    if not _PROMPT.match(text, start, line_end):
        _value_on(text, start, line_end, add, shaped=shaped)


def _value_on(text: str, start: int, end: int, add: Add, *, shaped: bool) -> None:
    """The value a line from ``start`` to ``end`` holds alone, unless it is a placeholder or
    an e-mail address (or, ``shaped``, could be something other than a secret)."""
    m = _WORD.match(text, start, end)
    if m is None:
        return
    value = m.group("v")
    if _skip_value(value) or _EMAIL.fullmatch(value):
        return
    if shaped and not (password_shaped(value) or _KEYISH.fullmatch(value)):
        return
    add((m.start("v"), m.end("v"), "password"))


def _file_lines(text: str, end: int, add: Add) -> None:
    """The lines a secret file prints, up to a prompt or a blank line (five at most)."""
    for _ in range(5):
        if end >= len(text):
            return
        start = end + 1
        end = _line_end(text, start)
        if _PROMPT.match(text, start, end) or not text[start:end].strip():
            return
        # user:secret (an .htpasswd's, a chap-secrets' line): the user name stays, when
        # what follows it is a secret on its own ({SHA}... is read as one only with it)
        user = _USER_FIELD.match(text, start, end)
        found: list[tuple[int, int, str]] = []
        if user is not None:
            _value_on(text, user.end(), end, found.append, shaped=True)
        if found:
            add(found[0])
        else:
            _value_on(text, start, end, add, shaped=True)

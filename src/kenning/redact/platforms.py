"""Secrets in the configuration formats of less common platforms, which name them in a
way the general rules do not read (found by the blind5 corpus, tests/fixtures/secrets_blind5):

* Windows answer files (unattend.xml): ``<AdministratorPassword><Value>x</Value>``, the
  value in a child element of the element that names it (sysprep's
  ``*SENSITIVE*DATA*DELETED*`` is no secret);
* Remote Desktop files: ``password 51:b:<hex>``, the DPAPI blob of the password, whole;
* Apache's ``SetEnv NAME value`` and nginx's ``fastcgi_param NAME value;``, judged by the
  name as an assignment is;
* HAProxy: ``stats auth user:password`` and a userlist's ``insecure-password x``;
* Nagios' resource.cfg: ``$USER4$=x``, the macros that hold its passwords, when the value
  looks like a credential (not a plugin folder, not a plain user name);
* Gradle's and other DSLs' ``storePassword "x"``: a secret's name alone on its line
  before a quoted value, without ``=`` or ``:``.

Each rule starts from a literal found in the text (or its lower-cased byte copy) and
matches a bounded pattern from there, so it stays linear."""

from __future__ import annotations

import re
from collections.abc import Callable

from kenning.redact.lazy import lazy
from kenning.redact.named import (
    _credential_shaped,
    _hits,
    _named_secret,
    _secret_word,
    _skip_value,
    password_shaped,
)

_F = re.ASCII
Add = Callable[[tuple[int, int, str]], None]

# <AdministratorPassword>\n  <Value>x</Value>: the element's name, then its Value child.
_VALUE_CHILD = lazy(
    r"<(?P<n>[A-Za-z_][A-Za-z0-9_.-]{0,60}+)>[ \t\r\n]{0,200}+"
    r"<Value>(?P<v>[^<>\r\n]{1,256}+)</Value>",
    _F,
)
_RDP_PASSWORD = lazy(r"[ \t]*+password[ \t]++51:b:(?P<v>[0-9A-Fa-f]{16,}+)", _F)
_SET_ENV = lazy(
    r"(?:SetEnv|fastcgi_param)[ \t]++(?P<n>[A-Za-z_][A-Za-z0-9_]{0,80}+)[ \t]++"
    r"(?:\"(?P<dq>[^\"\r\n]{1,200}+)\"|(?P<bare>[^\s\";]{1,200}+))",
    _F,
)
_STATS_AUTH = lazy(r"stats[ \t]++auth[ \t]++[^\s:]{1,64}+:(?P<v>[^\s]{1,200}+)", _F)
_INSECURE_PASSWORD = lazy(r"insecure-password[ \t]++(?P<v>[^\s]{1,200}+)", _F)
_NAGIOS_USER = lazy(r"\$USER[0-9]{1,3}\$[ \t]*+=[ \t]*+(?P<v>[^\s]{1,200}+)[ \t]*+(?:\r?\n|\Z)", _F)
# storePassword "x" (Gradle, Groovy and Ruby DSLs): the name, spaces, a quoted value, and
# nothing more on the line.
_DSL_LINE = lazy(
    r"[ \t]*+(?P<n>[A-Za-z_][A-Za-z0-9_]{0,60}+)[ \t]++"
    r"(?:\"(?P<dq>[^\"\r\n]{1,200}+)\"|'(?P<sq>[^'\r\n]{1,200}+)')[ \t]*+;?[ \t]*+(?:\r?\n|\Z)",
    _F,
)


def _value(m: re.Match[str]) -> str:
    return next(g for g in ("dq", "sq", "bare") if g in m.re.groupindex and m.group(g) is not None)


def platforms(text: str, raw: bytes, low: bytes, add: Add) -> None:
    """Add the secrets of the formats in the module's docstring."""
    for at in _hits(raw, b"<Value>"):
        # back over the blank between the element's tag and its Value child
        gap = len(text[max(0, at - 200) : at]) - len(text[max(0, at - 200) : at].rstrip())
        close = at - gap - 1
        start = text.rfind("<", max(0, close - 62), close)
        if close > 0 and text[close] == ">" and start >= 0:
            m = _VALUE_CHILD.match(text, start)
            if m is not None and m.start("v") == at + 7:
                value = m.group("v").strip()
                if value and _named_secret(m.group("n"), value):
                    add((m.start("v"), m.end("v"), _secret_word(m.group("n"))))
    for at in _hits(raw, b"51:b:"):
        m = _RDP_PASSWORD.match(text, text.rfind("\n", 0, at) + 1)
        if m is not None and m.start("v") == at + 5:
            add((m.start("v"), m.end("v"), "password"))
    for needle in (b"setenv", b"fastcgi_param"):
        for at in _hits(low, needle):
            if (m := _SET_ENV.match(text, at)) is not None:
                group = _value(m)
                if _named_secret(m.group("n"), m.group(group), group == "dq"):
                    add((m.start(group), m.end(group), _secret_word(m.group("n"))))
    for at in _hits(raw, b"stats"):
        if (m := _STATS_AUTH.match(text, at)) is not None and not _skip_value(m.group("v")):
            add((m.start("v"), m.end("v"), "password"))
    for at in _hits(raw, b"insecure-password"):
        m = _INSECURE_PASSWORD.match(text, at)
        if m is not None and not _skip_value(m.group("v")):
            add((m.start("v"), m.end("v"), "password"))
    for at in _hits(raw, b"$USER"):
        if (m := _NAGIOS_USER.match(text, at)) is not None:
            value = m.group("v")
            if _credential_shaped(value) or password_shaped(value):
                add((m.start("v"), m.end("v"), "password"))
    _dsl_lines(text, low, add)


def _dsl_lines(text: str, low: bytes, add: Add) -> None:
    done: set[int] = set()  # each line is matched once, however many names it holds
    for needle in (b"pass", b"secret", b"token", b"pw"):
        for at in _hits(low, needle):
            line = text.rfind("\n", 0, at) + 1
            if line in done:
                continue
            done.add(line)
            m = _DSL_LINE.match(text, line)
            if m is None or not m.start("n") <= at < m.end("n"):
                continue
            group = _value(m)
            if _named_secret(m.group("n"), m.group(group), quoted=True):
                add((m.start(group), m.end(group), _secret_word(m.group("n"))))

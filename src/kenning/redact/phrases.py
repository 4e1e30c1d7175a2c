"""Credentials said in ways the named rules do not read: another language's word for a
password ("das Passwort ist ..."), the value before its name ("use ... as the password"),
a login pair ("log in with admin / ..."), a database's superuser ("mysql root = ..."),
basic auth as a pair in code (``auth=('admin', ...)``), PHP's ``define('AUTH_KEY', ...)``,
a Markdown table's password column, a webhook of one's own whose path is its secret,
and Algolia's key given to its client.

Each value must be shaped as only a credential is (letters mixed with digits or
symbols, `named._credential_shaped`), so a sentence going on ("das Passwort ist falsch")
is never taken for one. Each rule looks for its literal in the lower-cased text first.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator

from kenning.redact.lazy import lazy
from kenning.redact.named import (
    _credential_like,
    _credential_shaped,
    _name_kind,
    _passwordish,
    _skip_value,
    passphrase,
    password_shaped,
)

Add = Callable[[tuple[int, int, str]], None]

_VALUE = r"(?:\"(?P<dq>[^\"\r\n]{4,100})\"|'(?P<sq>[^'\r\n]{4,100})'|(?P<bare>[^\s\"'`|]{4,200}+))"
_TRAIL = ".,;:?)]}>"  # not "!": passwords end with one more often than these sentences do

# A password's name in other languages, then up to four words, then "is" in that
# language (or ":" or "="), then the value.
_WORDS = (
    "passwort",
    "kennwort",
    "mot de passe",
    "contraseña",
    "contrasena",
    "senha",
    "wachtwoord",
    "hasło",
    "haslo",
    "lösenord",
    "losenord",
    "adgangskode",
    "passord",
    "salasana",
    "пароль",
    "mdp",
    "clave",
    "heslo",
    "jelsz",
    "sifre",
    "şifre",
    "parola",
    "mật khẩu",
    "mat khau",
    "kata sandi",
    "schlüssel",
    "schluessel",
    "kodeord",
    "klucz",
    "ключ",
    "clé",
    "chave",
    "chiave",
    "sleutel",
    "nyckel",
)
# The words above for a key of any kind, which other words hold too (отключить, "to switch
# off"; hoofdsleutelbos, "main keyring"): they name a key only where a word starts.
_KEYS = ("klucz", "ключ", "clé", "chave", "chiave", "sleutel", "nyckel")
# ... and with the two that name a password as often (la clave del wifi, WLAN-Schlüssel):
# what a key of a database is called in them is never a secret.
_KEY_NAMES = (*_KEYS, "clave", "schlüssel", "schluessel")
# A database's key named by its kind: the word after the key's word (klucz główny, clé
# primaire, chiave esterna, clave foránea, chave estrangeira) ...
_DB_KEY_AFTER = lazy(
    r"\w+[ \t]+(?:prim[aáà]i?r|[ée]trang|estrang|est[ée]r|extern|for[aá]ne|ajen|g[lł][oó]wn"
    r"|obc[ayeiy]|podstawow|unik|[uú]nic|univoc|comp(?:os|uest)|z[lł]o[zż]on|candidat|kandyduj|surrog"
    r"|subrog|substitu|sustitu|zast[eę]pcz|natur|partycj|sortowan"
    r"|d[ei][ \t]+(?:partition|partizion|partici|parti[cç]|tri\b|ordena|ordinam))",
    re.IGNORECASE,
)
# ... or before it, or in its compound (Primärschlüssel, первичный ключ, vreemde sleutel)
_DB_KEY_BEFORE = lazy(
    r"(?:prim[aä]r|fremd|sekund[aä]r|kandidat|verbund|partitions?|sortier|surrogat"
    r"|primaire|vreemde|unieke|samengestelde|secundaire|främmande|sammansatt|unik"
    r"|первичн|внешн|уникальн|составн|суррогатн|естественн)\w{0,4}[ \t-]*\Z",
    re.IGNORECASE,
)
# A column's name after a key's word is an identifier, not a key: id_42, order_id3
_COLUMN = lazy(r"(?:[a-z][a-z0-9]*_)*(?:id|pk|fk|uuid|key|nr|no)[0-9]*(?:_[a-z0-9]+)*")
_IS = r"(?:ist|lautet|war|c'est|c’est|est|était|este|es|era|é|è|e|jest|är|er|on|je|van)"
_FOREIGN = lazy(
    r"(?:(?:passwort|kennwort|mot[ \t]de[ \t]passe|contrase(?:ñ|n)a|senha|wachtwoord"
    r"|has(?:ł|l)o|heslo|jelsz(?:ó|o)|l(?:ö|o)senord|adgangskode|passord|salasana|пароль"
    r"|(?:ş|s)ifre|parola|mdp|clave|m(?:ậ|a)t[ \t]kh(?:ẩ|a)u|kata[ \t]sandi"
    r"|schl(?:ü|ue)ssel|kodeord|klucz|ключ|clé|chave|chiave|sleutel|nyckel)\w{0,4}"
    # lösenordet, şifresi, paroladır; then a few words and "is", or the value at once
    # ("sunucu şifresi Xy7...") or after a few words ("пароль от вайфая Xy7...", a value
    # with a digit or a symbol): it must be shaped as only a credential is
    # (a word may hold an apostrophe: la parola d'ordine; a dash may say "is": пароль — ...)
    r"(?:(?:[ \t]+[\w'’-]{1,24}){0,6}?[ \t]*(?:" + _IS + r"|to|là|adalah|ialah|is|:|=|：|—|–)"
    r"|(?:[ \t]+[\w'’-]{1,24}){1,3}?(?=[ \t]+[^\s\"'`|]*[0-9!#$%&*+=?@^_~]))?"
    # the English word with another language's "is": "la password del database è ..."
    r"|(?:password|passwd)(?:[ \t]+\w{1,24}){0,6}?[ \t]*" + _IS + r")[ \t]+" + _VALUE,
    re.IGNORECASE,
)
_FOREIGN_IS = lazy(rb"[ \t](?:ist|lautet|war|est|\?tait|es|era|\?|e|jest|\?r|er|on|je|van)[ \t]")
# Chinese, Japanese, Korean: 数据库密码是 …, パスワードは …, 비밀번호는 …
# (a bare value typed in ASCII: what follows "パスワードは" in a sentence is the sentence)
_CJK = lazy(
    r"(?:密码|密碼|口令|密钥|密鑰|パスワード|暗証番号|비밀번호|비번)"
    r"(?:[^\s:：]{0,8}?(?:是|为|為|は|는|:|：)[ \t]*|[ \t]+)"
    + _VALUE.replace(r"[^\s\"'`|]{4,200}+", r"[!#-&(-_a-{}~]{4,200}+")
)
# Arabic, Greek, Hebrew, Hindi: كلمة المرور … هي, ο κωδικός … είναι, הסיסמה … היא,
# पासवर्ड … है (the value before its "is")
_SCRIPTS = lazy(
    r"(?:كلمة[ \t](?:المرور|السر|سر)|κωδικός|סיסמ[הא])[^\r\n:]{0,40}?(?:هي|είναι|היא|:)[ \t]*"
    + _VALUE
    + r"|पासवर्ड[^\r\n]{0,30}?[ \t](?P<before>[^\s\"'`|]{4,200})[ \t]+(?:है|हे)"
)
# Thai: รหัสผ่านคือ ... ("the password is"), รหัส wifi: ... ("the wifi's code:")
_THAI = lazy(r"(?:รหัสผ่าน|รหัส)[^\r\n:：=]{0,30}?(?:คือ|:|：|=)[ \t]*" + _VALUE)
# पासवर्ड: ..., पासवर्ड है ... (the value after its "is")
_HINDI = lazy(r"पासवर्ड(?:[ \t]*:|[ \t]+(?:है|हे)[ \t]*:?)[ \t]*" + _VALUE)
# Looked for in the text as ASCII with every other character a "?" (see engine._structured)
_FOREIGN_WORDS = tuple(w.encode("ascii", "replace") for w in _WORDS)

# "use X as the password", "set X as the admin password", "use X to sign in"
_BEFORE_NAME = lazy(
    r"\b(?:use|using|with|set|try|enter|type)[ \t]+" + _VALUE + r"[ \t]+(?:as[ \t]+"
    r"(?:(?:the|a|an|my|our|your|his|her|their)[ \t]+)?(?:[\w-]{1,20}[ \t]+){0,2}"
    r"(?:password|passphrase|passcode|passwd|pw|pwd|pin)\b"
    r"|to[ \t]+(?:(?:sign|log)[ \t-]?in|authenticate|get[ \t]+in)\b)",
    re.IGNORECASE,
)

# "log in to grafana with admin / X", "creds are deploy:X", "login: ops / X"
_LOGIN = lazy(
    r"\b(?:log(?:ged|ging)?[ \t-]?in(?:to)?|sign(?:ed|ing)?[ \t-]?in(?:to)?|creds|credentials"
    r"|login)\b"
    r"[^\r\n]{0,60}?(?<![\w/:.@-])(?P<user>[\w.@+-]{2,40})"
    r"(?:[ \t]*/[ \t]*|:)" + _VALUE,
    re.IGNORECASE,
)
_LOGIN_WORDS = (b"log", b"sign", b"cred")
# "try logging in as admin with ..."
_LOGIN_AS = lazy(
    r"\b(?:log|sign)(?:ged|ging)?[ \t-]?in(?:to)?\b[^\r\n]{0,40}?\bas[ \t]+[\w.@+-]{2,40}[ \t]+"
    r"(?:with|using|and)[ \t]+(?:(?:the[ \t]+)?(?:password|passwd|pw|pass)[ \t]+)?" + _VALUE,
    re.IGNORECASE,
)
# "login with root and ..."
_LOGIN_AND = lazy(
    r"\blog(?:ging)?[ \t-]?in[ \t]+(?:with|as)[ \t]+[\w.@+-]{2,40}[ \t]+and[ \t]+" + _VALUE,
    re.IGNORECASE,
)

# A Markdown table whose header names a password column.
_HEADER_NAME = lazy(
    r"\A(?:pass(?:word|wd|phrase|code)?|pwd|pw|secret|token|(?:api[ _-]?)?keys?|creds|credentials?"
    r"|passwort|kennwort"
    r"|mot de passe|contrase(?:ñ|n)a|senha)\Z",
    re.IGNORECASE,
)
# ... of which a key's column holds names as often as keys.
# ... alone or several joined ("Password / token"), with a note in brackets ("Password
# (plain)")
_HEADER_JOIN = lazy(r"[ \t]*(?:/|,|&|\+|\bor\b|\band\b)[ \t]*", re.IGNORECASE)
_HEADER_NOTE = lazy(r"[ \t]*\([^()]{0,40}\)[ \t]*\Z")
_KEY_HEADER = lazy(r"\A(?:(?:api[ _-]?)?keys?)\Z", re.IGNORECASE)
_RULE_ROW = lazy(r"\A\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*\Z")


# A webhook of one's own whose path holds its secret: https://ci.acme.dev/hooks/<40 hex>
_HOOK_PATH = lazy(
    r"://[^\s/?#]+(?:/[^\s/?#]+)*?/(?:hooks?|webhooks?|incoming)/(?P<s>[A-Za-z0-9_-]{20,200})"
    r"(?![A-Za-z0-9_-])",
    re.ASCII,
)
# algoliasearch('APP_ID', 'API_KEY'): the second argument is the key.
_ALGOLIA = lazy(
    r"algoliasearch\([ \t]*(['\"])[A-Za-z0-9]{4,40}\1[ \t]*,[ \t]*"
    r"(['\"])(?P<s>[A-Za-z0-9]{24,64})\2",
    re.ASCII | re.IGNORECASE,
)


# A password piped to a command that reads it from stdin.
_PIPED = lazy(
    r"\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)?" + _VALUE + r"[ \t]*\|[ \t]*(?P<cmd>[^\r\n|;&]+)"
)
# ... or given to it as a here-string: chpasswd <<< 'user:password', vncpasswd -f <<< ...
_HERE_STRING = lazy(r"<<<[ \t]*" + _VALUE)
_READS_STDIN = lazy(
    r"--password-stdin|--pass(?:word)?[_-]?stdin|\bsudo\b[^\r\n]*?(?<![\w-])-[a-zA-Z]*S\b"
    r"|\bchpasswd\b|\bpasswd[ \t]+--stdin|\b(?:tiger|tight|x11)?vncpasswd\b"
    r"|\bcryptsetup\b[^\r\n]*?\b(?:open|luksOpen|luksFormat|luksAddKey)\b"
    r"|\bsmbpasswd\b[^\r\n]*?(?<![\w-])-[a-zA-Z]*s\b"
)
# _READS_STDIN's matches each hold one of these (lower-cased), and none a command's end
_STDIN_WORDS = (b"pass", b"sudo", b"cryptsetup")
_CMD_ENDS = (b"\r", b"\n", b"|", b";", b"&")
# Dockerfile ENV NAME value (the older form, with a space); setPassword("...") in code;
# a Go MySQL DSN, user:password@tcp(host)/db
_ENV_SPACE = lazy(r"^[ \t]*ENV[ \t]+(?P<name>[A-Za-z_][A-Za-z0-9_]*)[ \t]+" + _VALUE, re.M)
_SETTER = lazy(
    r"\.set(?P<name>[A-Z][A-Za-z]{1,30})\([ \t]*(?:\"(?P<dq>[^\"\r\n]{4,100})\""
    r"|'(?P<sq>[^'\r\n]{4,100})')[ \t]*\)"
)
_GO_DSN = lazy(r"(?<![\w/])[\w.-]{1,64}:(?P<bare>[^\s@/:\"']{4,128})@(?:tcp|unix)\(")


# Code that gives a secret's name a value other rules do not read: PHP's 'password' =>
# '...', a typed declaration (const DB_PASSWORD: &str = "...", val apiKey: String = "..."),
# an environment variable's fallback (process.env.JWT_SECRET || '...',
# os.getenv("DB_PASSWORD", "...")), PowerShell's ConvertTo-SecureString "...".
_ARROW = lazy(r"[\"'](?P<name>[A-Za-z_][\w.-]{1,60})[\"'][ \t]*=>[ \t]*" + _VALUE)
_TYPED = lazy(
    r"\b(?P<name>[A-Za-z_]\w{1,60})[ \t]*:[ \t]*[\w&<>' ]{1,30}?=[ \t]*"
    r"(?:\"(?P<dq>[^\"\r\n]{4,200})\"|'(?P<sq>[^'\r\n]{4,200})')"
)
_FALLBACK = lazy(
    r"(?:env|environ|getenv)\b[.\[(]?[ \t]*(?:get\()?[ \t]*[\"']?(?P<name>[A-Za-z_]\w{1,60})[\"']?"
    r"[ \t]*\]?[ \t]*(?:\|\||\?\?|,|\bor\b)[ \t]*(?:\"(?P<dq>[^\"\r\n]{4,200})\""
    r"|'(?P<sq>[^'\r\n]{4,200})')"
)
_SECURE_STRING = lazy(
    r"ConvertTo-SecureString[ \t]+(?:-String[ \t]+)?(?:\"(?P<dq>[^\"\r\n]{1,200})\""
    r"|'(?P<sq>[^'\r\n]{1,200})')",
    re.IGNORECASE,
)
# redis.conf: requirepass ..., masterauth ...
_REDIS_CONF = lazy(r"^[ \t]*(?:requirepass|masterauth)[ \t]+" + _VALUE, re.M)
# "need the db password? it's ...", "ssh in (user ubuntu, pass ...)"
_ITS = lazy(
    r"\b(?:password|passwd|pw|pwd|creds?)\b[^\r\n]{0,40}?\b(?:it'?s|it[ \t]+is)[ \t]+" + _VALUE,
    re.IGNORECASE,
)
# "the DB password got rotated, new one: ...", "password changed, now: ..."
_NEW_ONE = lazy(
    r"\b(?:password|passwd|passphrase|pw|pwd|creds?)\b[^\r\n]{0,60}?"
    r"\b(?:new[ \t]+(?:one|password|pw)|now)[ \t]*(?:[:=]|is)[ \t]*" + _VALUE,
    re.IGNORECASE,
)
_USER_PASS = lazy(
    r"\buser(?:name)?[ \t]+[\w.@-]{1,40}[ \t]*,[ \t]*pass(?:word)?[ \t]+" + _VALUE,
    re.IGNORECASE,
)
# An OpenVPN static key (tls-auth, tls-crypt): hex lines between its markers.
_OPENVPN = lazy(
    r"-----BEGIN OpenVPN Static key V1-----(?P<body>[0-9a-fA-F\s]{32,}?)"
    r"-----END OpenVPN Static key V1-----"
)
# LaunchDarkly's SDK, mobile and API access keys: sdk-, mob- or api- and a UUID.
_LAUNCHDARKLY = lazy(
    r"(?<![\w-])(?:sdk|mob|api)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![\w-])"
)
# strongSwan's ipsec.secrets: : PSK "...", : XAUTH "...", : EAP "..."
_IPSEC = lazy(r":[ \t]*(?:PSK|XAUTH|EAP)[ \t]+" + _VALUE)
# A database's superuser named by the database: "mysql root = ...", "postgres admin pw: ..."
_DB_ROOT = lazy(
    r"\b(?:my[ \t]?sql|mariadb|postgres(?:ql)?|psql|pg|mongo(?:db)?|redis|mssql|sql[ \t]?server"
    r"|oracle|db|database|rabbitmq|elastic(?:search)?)[ \t]+(?:root|admin|sa|postgres|superuser)"
    r"(?:[ \t]+(?:password|passwd|pass|pw|pwd))?[ \t]*(?:=|:|->|→|\bis\b)[ \t]*" + _VALUE,
    re.IGNORECASE,
)
_DB_WORDS = (
    b"my",
    b"maria",
    b"postgres",
    b"psql",
    b"pg",
    b"mongo",
    b"redis",
    b"mssql",
    b"sql",
    b"oracle",
    b"db",
    b"database",
    b"rabbit",
    b"elastic",
)
_SUPERUSERS = (b"root", b"admin", b" sa", b"postgres", b"superuser")
# HTTP basic auth given as a pair in code: requests' auth=('user', '...'),
# HTTPBasicAuth('user', '...'), aiohttp.BasicAuth("user", "...")
_BASIC_AUTH = lazy(
    r"\b(?:auth[ \t]*=[ \t]*(?:[\w.]*BasicAuth)?|[\w.]*BasicAuth)[ \t]*\([ \t]*"
    r"(?:\"[^\"\r\n]{1,80}\"|'[^'\r\n]{1,80}')[ \t]*,[ \t]*"
    r"(?:\"(?P<dq>[^\"\r\n]{1,200})\"|'(?P<sq>[^'\r\n]{1,200})')",
    re.IGNORECASE,
)
# A directive of a config language: a secret's name, a space, its value, alone on its
# line (Gradle's storePassword '...', Apache's AuthLDAPBindPassword "...")
_DIRECTIVE = lazy(
    r"(?:[ \t]*(?:[-*+>]|[0-9]{1,3}[.)])[ \t]+)*[ \t]*(?P<name>[A-Za-z_][\w.-]{2,60})[ \t]+"
    r"(?:\"(?P<dq>[^\"\r\n]{4,200})\"|'(?P<sq>[^'\r\n]{4,200})'|(?P<bare>[^\s\"'`|;{}]{6,200}))"
    r"[ \t]*;?[ \t]*(?:\r?\n|\Z)"
)
# Terraform: variable "db_password" { ... default = "..." }
_TF_DEFAULT = lazy(
    r"variable[ \t]+\"(?P<name>[\w-]{1,80})\"[ \t]*\{[^{}]{0,600}?\bdefault[ \t]*=[ \t]*"
    r"\"(?P<dq>[^\"\r\n]{4,200})\""
)
# PHP's define('AUTH_KEY', '...'): WordPress's keys and salts, and any secret's name
_DEFINE = lazy(
    r"\bdefine[ \t]*\([ \t]*([\"'])(?P<name>[A-Za-z_]\w{1,60})\1[ \t]*,[ \t]*"
    r"(?:\"(?P<dq>[^\"\r\n]{4,200})\"|'(?P<sq>[^'\r\n]{4,200})')[ \t]*\)",
    re.IGNORECASE,
)


# Secrets that code passes where no name is assigned them (each seen missed by the blind3
# corpus of code): a builder's .password("..."), a CDK SecretValue.unsafePlainText("..."),
# RSpec's let(:password) { "..." }, a default in a placeholder (Spring's
# ${db.password:...}, the shell's ${DB_PASSWORD:-...}), C's #define DB_PASS "...",
# Django's create_user(name, email, "..."), MySQL's mysql_real_connect(c, host, user,
# "..."), sbt's Credentials(realm, host, user, "..."), a Java key store's
# "...".toCharArray(), a Redis client's .auth("...") (OpenResty's red:auth("...")), a
# user:password pair given to btoa/b64encode, and the rest of a secret's string literal
# joined with + ("...abc" + "def...").
_Q = r"(?:\"(?P<dq>[^\"\r\n]{1,200})\"|'(?P<sq>[^'\r\n]{1,200})')"
_STR = r"(?:\"[^\"\r\n]{0,200}\"|'[^'\r\n]{0,200}')"
_BUILDER = lazy(r"\.(?P<name>[A-Za-z_]\w{1,40})\([ \t]*" + _Q + r"[ \t]*\)")
_NOT_BUILDER = lazy(
    r"(?:get|fetch|read|load|lookup|find|has|is|remove|delete|revoke|validate|verify|check"
    r"|require|create|rotate|describe|list|mask|hide|hash|encrypt|decrypt|sign|parse|match"
    r"|expect|assert|to|from|contains|equals|should)(?![a-z])",
    re.IGNORECASE,
)
_CDK_PLAIN = lazy(
    r"SecretValue\.(?:unsafePlainText|plainText|unsafe_plain_text|plain_text)\([ \t]*" + _Q
)
_RSPEC_LET = lazy(r"let!?\([ \t]*:(?P<name>\w{1,60})[ \t]*\)[ \t]*\{[ \t]*" + _Q + r"[ \t]*\}")
_DEFAULT_IN = lazy(
    r"\$\{(?P<name>[A-Za-z_][\w.-]{0,80}):[-=]?(?P<bare>[^\s}\"'$:?+][^\s}\"'$]{0,199})\}"
)
_C_DEFINE = lazy(
    r"#[ \t]*define[ \t]+(?P<name>[A-Za-z_]\w{0,60})[ \t]+(?:L|u8)?\"(?P<dq>[^\"\r\n]{1,200})\""
)
_CREATE_USER = lazy(
    r"create_(?:super)?user\([ \t]*" + _STR + r"[ \t]*,[ \t]*" + _STR + r"[ \t]*,[ \t]*" + _Q
)
_MYSQL_REAL = lazy(
    r"mysql_real_connect\([ \t]*[\w&*>.-]{1,60}[ \t]*,[ \t]*(?:" + _STR + r"|\w{1,60})[ \t]*,"
    r"[ \t]*(?:" + _STR + r"|\w{1,60})[ \t]*,[ \t]*" + _Q
)
_SBT_CREDENTIALS = lazy(
    r"Credentials\([ \t]*"
    + _STR
    + r"[ \t]*,[ \t]*"
    + _STR
    + r"[ \t]*,[ \t]*"
    + _STR
    + r"[ \t]*,[ \t]*"
    + _Q
    + r"[ \t]*\)"
)
_CHAR_ARRAY = lazy(
    r"(?:\.(?:load|getKey|init|store|setKeyEntry|getEntry)|PBEKeySpec|PasswordProtection)\("
    r"[^\r\n;]{0,160}?\"(?P<dq>[^\"\r\n]{1,200})\"\.toCharArray\(\)"
)
_REDIS_AUTH = lazy(r"auth\([ \t]*" + _Q + r"[ \t]*\)")
_ENCODED_PAIR = lazy(
    r"(?:btoa|b64encode|encode64|EncodeToString\(\[\]byte)\([ \t]*b?[\"']"
    r"[^\s:\"'/]{1,64}:(?P<dq>[^\s\"']{1,200})[\"']"
)
_CONCAT = lazy(
    r"(?P<name>[A-Za-z_]\w{0,60})[\"']?[ \t]*[:=][ \t]*"
    r"(?P<first>\"[^\"\r\n]{4,200}\"|'[^'\r\n]{4,200}')"
    r"(?P<rest>(?:\s{0,40}\+\s{0,40}(?:\"[^\"\r\n]{1,200}\"|'[^'\r\n]{1,200}'))+)"
)
_LITERAL = lazy(r"\"(?P<dq>[^\"\r\n]{1,200})\"|'(?P<sq>[^'\r\n]{1,200})'")


def _code_calls(text: str, low: bytes, add: Add) -> None:
    if b"." in low and b"(" in low:
        for m in _BUILDER.finditer(text):
            name = m.group("name")
            if _secret_kind(name) and not _NOT_BUILDER.match(name):
                _value(m, add, "password")
    if b"secretvalue." in low:
        for m in _CDK_PLAIN.finditer(text):
            _value(m, add, "password", shaped=False)
    if b"let" in low:
        for m in _at(_RSPEC_LET, text, low, (b"let",)):
            if _name_kind(m.group("name")) is not None:
                _value(m, add, "password", shaped=_name_kind(m.group("name")) in ("key", "auth"))
    if b"${" in low:
        for at in _hits(low, b"${"):
            default = _DEFAULT_IN.match(text, at)
            if default is not None and _secret_kind(default.group("name")):
                _value(default, add, "password", shaped=False)
    if b"define" in low:
        for at in _hits(low, b"#"):
            define = _C_DEFINE.match(text, at)
            if define is not None and (kind := _name_kind(define.group("name"))) is not None:
                _value(define, add, "password", shaped=kind in ("key", "auth"))
    for pattern, words, shaped in (
        (_CREATE_USER, (b"create_",), False),
        (_MYSQL_REAL, (b"mysql_real_connect",), False),
        (_SBT_CREDENTIALS, (b"credentials(",), False),
        (_CHAR_ARRAY, (b"tochararray",), False),
        (_REDIS_AUTH, (b"auth(",), True),
        (_ENCODED_PAIR, (b"b64encode(", b"btoa(", b"encode64(", b"encodetostring("), True),
    ):
        if any(word in low for word in words):
            for m in pattern.finditer(text):
                if pattern is not _REDIS_AUTH or text[m.start() - 1 : m.start()] in (".", ":"):
                    _value(m, add, "password", shaped=shaped)
    if b"+" in low and (b'" +' in low or b"' +" in low or b'"+' in low or b"'+" in low):
        names = {_name_start(text, at) for word in _NAME_WORDS for at in _hits(low, word)}
        for at in sorted(names):
            joined = _CONCAT.match(text, at)
            if joined is None:
                continue
            kind = _name_kind(joined.group("name")) or (
                "key" if joined.group("name") == "key" else None
            )
            if kind is None:
                continue
            whole = "".join(
                x.group("dq") or x.group("sq") or "" for x in _LITERAL.finditer(joined.group(0))
            )
            if kind in ("key", "auth") and not _credential_like(whole, True):
                continue
            if _skip_value(whole):
                continue
            for lit in _LITERAL.finditer(text, joined.start("first"), joined.end("rest")):
                group = "dq" if lit.group("dq") is not None else "sq"
                add((lit.start(group), lit.end(group), "secret_assignment"))


# "usa X como contraseña", "use X como senha": the value before the word, in Spanish and
# Portuguese
_BEFORE_COMO = lazy(
    r"\b(?:usa|usar|use|usá|utiliza|utilice|utilize)[ \t]+" + _VALUE + r"[ \t]+como[ \t]+"
    r"(?:(?:la|el|a|o|tu|su|sua)[ \t]+)?(?:contraseña|contrasena|clave|senha|password)\b",
    re.IGNORECASE,
)


# A password given to a secret's flag by process substitution: --password <(echo ...)
_SUBSTITUTED = lazy(
    r"--?(?:password|passwd|passphrase|pass|secret|token)[\w-]*(?:[ \t]+|=)<\([ \t]*"
    r"(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)?(?:\"(?P<dq>[^\"\r\n]{1,100})\""
    r"|'(?P<sq>[^'\r\n]{1,100})'|(?P<bare>[^\s\"'`|)]{1,200}))[ \t]*\)",
    re.IGNORECASE,
)
# OpenWeather's (and Wolfram's) API key is the query's appid: ?q=Lyon&appid=<32 hex>
_APPID = lazy(r"[?&]appid=(?P<bare>[0-9a-f]{32})(?![0-9A-Za-z])", re.IGNORECASE)
# Cisco IOS: snmp-server community <string> RO|RW (the community is the password)
_SNMP = lazy(r"\bsnmp-server[ \t]+community[ \t]+(?P<bare>[^\s]{4,64})", re.IGNORECASE)
_SNMP_DEFAULTS = frozenset(("public", "private"))
_CISCO_WORDS = (b"password 7 ", b"password 0 ", b"secret 5 ", b"secret 8 ", b"secret 9 ")
# Cisco IOS: password 7 <hex> (reversible), secret 5|8|9 <hash>, password 0 <clear text>
_CISCO_PASSWORD = lazy(
    r"(?<![\w-])(?:password|secret)[ \t]+(?:7[ \t]+(?P<hex>[0-9A-Fa-f]{4,200})"
    r"|[589][ \t]+(?P<hash>\$[^\s]{8,200})|0[ \t]+(?P<bare>[^\s]{4,200}))(?![^\s])",
    re.IGNORECASE,
)
# The value before its name: "X is the password for the panel", "X <- that's the root
# password", read back from the word "password" over its line.
_VALUE_FIRST = lazy(
    r"(?:^|[ \t(])(?P<bare>[^\s\"'`]{4,100})[ \t]+(?:is|was|=|←|<-|—|–|--?)[ \t]+"
    r"(?:(?:that'?s|that[ \t]+is|it'?s|this[ \t]+is)[ \t]+)?"
    r"(?:the|my|our|your|his|her|their)[ \t]+(?:[\w-]{1,20}[ \t]+){0,3}\Z",
    re.IGNORECASE,
)
# ... or what it opens, in brackets after it: "Xy7... (wifi)"
_WHAT_IT_OPENS = lazy(
    r"(?:^|[ \t])(?P<bare>[^\s\"'`]{6,100})[ \t]+\((?:wifi|wi-fi|wlan|password|pw|pin)\)"
    r"[ \t]*(?:\r?\n|\Z)",
    re.IGNORECASE,
)
# "ana : Xy7... on 10.0.0.5": a user, a colon with blanks around it, a password, a host
_USER_COLON = lazy(
    r"(?P<user>[\w.@+-]{2,40})[ \t]+:[ \t]+(?P<bare>[^\s\"'`]{6,100})[ \t]+(?:on|@|at|for)[ \t]+"
    r"(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[\w-]{1,63}(?:\.[\w-]{1,63})+)(?![\w.-])"
)
# Hardhat's and Truffle's network config: accounts: ["0x<64 hex>", ...] are private keys
_ACCOUNTS = lazy(r"accounts[\"']?[ \t]*:[ \t]*\[(?P<list>[^\]\r\n]{66,2000})\]")
_HEX_KEY = lazy(r"[\"'`](?P<v>(?:0x)?[0-9a-fA-F]{64})[\"'`]")
# "I regenerated it, new one: ...": a key rotated, its new value (a key's shape)
_REGENERATED = lazy(
    r"\b(?:regenerat|rotat|reissu|recreat|reset|revok)\w*\b[^\r\n]{0,60}?"
    r"\bnew[ \t]+(?:one|key|token|secret)[ \t]*(?:[:=]|is)[ \t]*" + _VALUE,
    re.IGNORECASE,
)
# A Wi-Fi network's key in prose: "guests can use network X, the key is ..."
# (or its code, its pass: "the wifi is HomeNet and the code is ...")
_WIFI_KEY = lazy(
    r"\b(?:wifi|wi-fi|wlan|network|ssid|wpa2?|router)\b[^\r\n]{0,80}?"
    r"\b(?:key|code|pass|password|pw)[ \t]*(?:is|:|=)[ \t]*" + _VALUE,
    re.IGNORECASE,
)
_WIFI_KEY_WORDS = (b"key", b"code", b"pass", b"pw")
# ... or the word first: "pass for the guest wifi (...) is ...", "le code du wifi c'est ..."
_WIFI_WORD_FIRST = lazy(
    r"\b(?:key|code|pass|password|pw|cl[ée]|clave|chave|chiave)[ \t]+"
    r"(?:for|to|of|du|de|del|do|da|des|della|dello)\b[^\r\n]{0,40}?\b(?:wifi|wi-fi|wlan)\b"
    r"[^\r\n]{0,40}?(?:[ \t](?:is|c'est|c’est|est|es|è|é|ist)|:|=)[ \t]*" + _VALUE,
    re.IGNORECASE,
)
_WIFI_WORDS = (b"key", b"code", b"pass", b"pw", b"cl", b"chave", b"chiave")
# "wifi: HomeNet / ...": the network's name and its password, as a login pair
_WIFI_PAIR = lazy(
    r"\b(?:wifi|wi-fi|wlan|ssid)\b[ \t]*[:=][ \t]*[^\s/]{1,40}[ \t]*/[ \t]*" + _VALUE,
    re.IGNORECASE,
)
# "creds: deploy@build.lan ...": a login at a host, then its password
_CREDS_AT = lazy(
    r"\b(?:creds|credentials|login)\b[ \t]*[:=][ \t]*[\w.+-]{1,40}@[\w.-]{2,80}[ \t]+" + _VALUE,
    re.IGNORECASE,
)
# dotnet user-secrets' answer: "Successfully saved Smtp:Password = ... to the secret store."
_SAVED_SECRET = lazy(
    r"Successfully[ \t]+saved[ \t]+\S+[ \t]+=[ \t]+(?P<bare>.{1,200}?)[ \t]+to[ \t]+the[ \t]+secret"
    r"[ \t]+store"
)


_DETERMINERS = (b"the ", b"my ", b"our ", b"your ", b"his ", b"her ", b"their ")


def _value_first(text: str, low: bytes, add: Add) -> None:
    # the common case, seen at C speed: no "the", "my"... in the 40 characters before
    # the word (the determiners' places are found once, then looked up by bisection)
    dets = sorted(at for d in _DETERMINERS for at in _hits(low, d))
    if not dets:
        return
    for word in (b"password", b"passphrase", b"passcode"):
        for at in _hits(low, word):
            near = bisect_left(dets, at - 40)
            if near == len(dets) or dets[near] >= at:
                continue
            start = max(low.rfind(b"\n", max(0, at - 200), at) + 1, at - 200)
            if (m := _VALUE_FIRST.search(text, start, at)) is not None:
                _value(m, add, "password")


# Words that say what a password opens, not that it is what follows: "Passwort für db-01",
# "mot de passe pour srv-02", "contraseña del host-3", "пароль от db-01", "hasło do db-01".
_PREPOSITIONS = frozenset(
    [
        "für",
        "fuer",
        "von",
        "vom",
        "zu",
        "zum",
        "zur",
        "auf",
        "bei",
        "an",
        "am",
        "im",
        "for",
        "of",
        "at",
        "in",
        "pour",
        "de",
        "du",
        "des",
        "au",
        "aux",
        "sur",
        "para",
        "por",
        "del",
        "al",
        "en",
        "do",
        "da",
        "dos",
        "das",
        "no",
        "na",
        "em",
        "per",
        "di",
        "della",
        "dello",
        "al",
        "voor",
        "bij",
        "op",
        "för",
        "till",
        "på",
        "av",
        "til",
        "af",
        "på",
        "dla",
        "od",
        "na",
        "для",
        "от",
        "к",
        "на",
        "в",
        "için",
    ]
)


def _after_preposition(text: str, at: int, m: re.Match[str]) -> bool:
    """Does the value follow the password's name and a preposition straight on, with no
    "is" or ":" between ("Passwort für db-01 vergessen")? It names what the password
    opens; a password is given after "is", a colon, or the thing's name.  (No word that
    says "is" in a language _IS reads is one: Polish "to", Estonian "on", Hungarian
    "van".)"""
    group = next(g for g in ("dq", "sq", "bare") if m.start(g) >= 0)
    words = text[at : m.start(group)].split()
    if len(words) < 2 or words[-1].lower() not in _PREPOSITIONS:
        return False
    # Only a name (db-01, web-2.example.com, srv_03) is what it opens; a value with
    # symbols or of a credential's shape (Passwort für Zq8!vR3#mT6k) is the password.
    value = m.group(group).rstrip(_TRAIL)
    return bool(_OPENED_NAME.fullmatch(value)) and not _credential_shaped(value)


# A host's, a database's or a service's name: letters, digits, dots, hyphens, underscores.
_OPENED_NAME = lazy(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", re.ASCII)


def phrases(text: str, low: bytes, add: Add) -> None:
    """Add the spans of credentials said in the ways above."""
    if b"wifi:" in low or b"key content" in low or b"wpa_passphrase" in low or b".psk" in low:
        _wifi(text, low, add)
    if any(word in low for word in _FOREIGN_WORDS) or b"passw" in low or b"??" in low:
        # matched where a name of a password starts, found in the bytes: a scan of the
        # whole text with every language's words costs a third of all redaction
        starts = {at for word in _FOREIGN_WORDS for at in _hits(low, word)}
        # the English word counts only with another language's "is" close after it
        starts |= {at for at in _hits(low, b"passw") if _FOREIGN_IS.search(low, at, at + 120)}
        for at in sorted(starts):
            if at and text[at - 1].isalpha() and text[at : at + 7].lower().startswith(_KEYS):
                continue  # a key's word inside another word: отключить ("switch off")
            if (m := _FOREIGN.match(text, at)) is None:
                continue
            if text[at : at + 10].lower().startswith(_KEY_NAMES) and _database_key(text, at, m):
                continue
            if _after_preposition(text, at, m):
                continue
            _value(m, add, "password")
        if b"??" in low:
            for m in _CJK.finditer(text):
                _value(m, add, "password")
            for m in _SCRIPTS.finditer(text):
                if m.group("before") is not None:
                    if password_shaped(m.group("before")):
                        add((m.start("before"), m.end("before"), "password"))
                else:
                    _value(m, add, "password")
            for m in _HINDI.finditer(text):
                _value(m, add, "password")
            for m in _THAI.finditer(text):
                _value(m, add, "password")
    if b" como " in low:
        for m in _at(_BEFORE_COMO, text, low, (b"us", b"utiliz")):
            _value(m, add, "password")
    if b" as " in low or b" to " in low:
        for m in _at(_BEFORE_NAME, text, low, _BEFORE_WORDS):
            _value(m, add, "password")
    if any(word in low for word in _LOGIN_WORDS):
        for m in _at(_LOGIN, text, low, _LOGIN_WORDS):
            if not m.group("user").isdigit():
                _value(m, add, "password")
        for m in _at(_LOGIN_AS, text, low, _LOGIN_WORDS):
            _value(m, add, "password")
        for m in _at(_LOGIN_AND, text, low, (b"log",)):
            _value(m, add, "password")
    if b"|" in low or "\u2502" in text:
        _keyed_rows(text, add)
    if b"|" in low:
        _tables(text, add)
        if b"echo" in low or b"printf" in low:
            for m in _at(_PIPED, text, low, (b"echo", b"printf")):
                if _READS_STDIN.search(m.group("cmd")):
                    # what a command reads as its password is one, whatever its shape
                    _value(
                        m, add, "password", shaped=False, user_first="chpasswd" in m.group("cmd")
                    )
    if b"<<<" in low and any(word in low for word in _STDIN_WORDS):
        for at in _hits(low, b"<<<"):
            # the command before it on its line (up to 200 characters back), found in
            # the bytes: a run of "<" (HTML, a diff's conflict markers) has a hit at
            # each character, and a regex's walk back over 200 of them costs 0.1 ms
            start = max(0, at - 200)
            start = max([start] + [low.rfind(sep, start, at) + 1 for sep in _CMD_ENDS])
            if not any(low.find(word, start, at) >= 0 for word in _STDIN_WORDS):
                continue  # no command that reads its password from stdin
            cmd = text[start:at]
            if _READS_STDIN.search(cmd) and (m := _HERE_STRING.match(text, at)) is not None:
                _value(m, add, "password", shaped=False, user_first="chpasswd" in cmd)
    if b"env" in low:
        for m in _ENV_SPACE.finditer(text):
            if _name_kind(m.group("name")) is not None:
                _value(m, add, "password", shaped=False)
    if b".set" in low:
        for m in _SETTER.finditer(text):
            if _name_kind(m.group("name")) is not None:
                _value(m, add, "password", shaped=False)
    if b"=>" in low:
        for m in _ARROW.finditer(text):
            if _name_kind(m.group("name")) is not None:
                _value(m, add, "password", shaped=False)
    if b":" in low and b"=" in low:
        names = {_name_start(text, at) for word in _NAME_WORDS for at in _hits(low, word)}
        for at in sorted(names):
            m = _TYPED.match(text, at)
            if m is not None and _name_kind(m.group("name")) is not None:
                _value(m, add, "password", shaped=False)
    if b"env" in low:
        for m in _at(_FALLBACK, text, low, (b"env", b"getenv")):
            if _name_kind(m.group("name")) is not None:
                _value(m, add, "password", shaped=False)
    if b"securestring" in low:
        for m in _SECURE_STRING.finditer(text):
            _value(m, add, "password", shaped=False)
    if b"requirepass" in low or b"masterauth" in low:
        for m in _REDIS_CONF.finditer(text):
            _value(m, add, "password", shaped=False)
    if b"it" in low:
        for m in _at(_ITS, text, low, (b"passw", b"pw", b"cred"), near=b"it"):
            _value(m, add, "password")
    if b"new" in low or b"now" in low:
        for m in _at(_NEW_ONE, text, low, (b"passw", b"pw", b"cred")):
            _value(m, add, "password")
    if b"user" in low:
        for m in _at(_USER_PASS, text, low, (b"user",)):
            _value(m, add, "password")
    if b"openvpn static key" in low:
        for m in _OPENVPN.finditer(text):
            body = m.group("body").strip()
            start = m.start("body") + m.group("body").index(body[:1])
            add((start, start + len(body), "private_key"))
    if b"psk" in low or b"xauth" in low or b"eap" in low:
        for m in _IPSEC.finditer(text):
            _value(m, add, "password", shaped=False)
    _code_calls(text, low, add)
    if b"sdk-" in low or b"mob-" in low or b"api-" in low:
        for m in _LAUNCHDARKLY.finditer(text):
            add((m.start(), m.end(), "secret_assignment"))
    if b"@tcp(" in low or b"@unix(" in low:
        for m in _GO_DSN.finditer(text):
            _value(m, add, "password", shaped=False)
    if b"hook" in low or b"incoming" in low:
        for m in _HOOK_PATH.finditer(text):
            if _credential_shaped(m.group("s")):
                add((m.start("s"), m.end("s"), "secret_assignment"))
    if b"algoliasearch" in low:
        for m in _ALGOLIA.finditer(text):
            add((m.start("s"), m.end("s"), "algolia_key"))
    if any(word in low for word in _SUPERUSERS):
        for m in _at(_DB_ROOT, text, low, _DB_WORDS):
            _value(m, add, "password")
    if b"auth" in low:
        for m in _at(_BASIC_AUTH, text, low, (b"auth", b"basicauth", b"httpbasicauth")):
            _value(m, add, "password", shaped=False)
    # A directive's name starts its line (after indentation or a list's marker): looked
    # for only a few characters back, so a long line of names costs no more than a short
    lines = set()
    for word in _DIRECTIVE_WORDS:
        for at in _hits(low, word):
            start = text.rfind("\n", max(0, at - _DIRECTIVE_LEAD), at) + 1
            if start or at <= _DIRECTIVE_LEAD:
                lines.add(start)
    for at in sorted(lines):
        m = _DIRECTIVE.match(text, at)
        if m is not None and _secret_kind(m.group("name")):
            _value(m, add, "password", shaped=m.group("bare") is not None)
    if b"variable" in low and b"default" in low:
        for m in _at(_TF_DEFAULT, text, low, (b"variable",)):
            if _secret_kind(m.group("name")):
                _value(m, add, "password", shaped=False)
    if b"<(" in low:
        for m in _SUBSTITUTED.finditer(text):
            _value(m, add, "password", shaped=False)
    if b"appid=" in low:
        for m in _APPID.finditer(text):
            add((m.start("bare"), m.end("bare"), "api_service_key"))
    for at in sorted(
        at for word in _CISCO_WORDS if word in low for at in _hits(low, word.partition(b" ")[0])
    ):
        if (m := _CISCO_PASSWORD.match(text, at)) is not None:
            group = "hex" if m.group("hex") else "hash" if m.group("hash") else "bare"
            if group != "bare" or not _skip_value(m.group("bare")):
                add((m.start(group), m.end(group), "password"))
    if b"snmp-server" in low:
        for m in _SNMP.finditer(text):
            if m.group("bare").lower() not in _SNMP_DEFAULTS:
                _value(m, add, "password", shaped=False)
    if b" is " in low or b" was " in low or b"- " in low or b"= " in low or b"?" in low:
        _value_first(text, low, add)
    if b"(w" in low or b"(p" in low:
        for word in (b"(wifi)", b"(wi-fi)", b"(wlan)", b"(pw)", b"(pin)", b"(password)"):
            for at in _hits(low, word):
                start = max(text.rfind("\n", max(0, at - 110), at) + 1, at - 110)
                m = _WHAT_IT_OPENS.search(text, start, min(len(text), at + len(word) + 2))
                if m is not None:
                    _value(m, add, "password")
    if b" : " in low:
        for at in _hits(low, b" : "):
            start = max(text.rfind("\n", max(0, at - 42), at) + 1, at - 42)
            m = _USER_COLON.search(text, start, min(len(text), at + 200))
            if m is not None and not m.group("user").isdigit():
                _value(m, add, "password")
    if b"accounts" in low:
        for at in _hits(low, b"accounts"):
            if (m := _ACCOUNTS.match(text, at)) is not None:
                for key in _HEX_KEY.finditer(text, m.start("list"), m.end("list")):
                    add((key.start("v"), key.end("v"), "ethereum_key"))
    if b"new " in low:
        for m in _at(
            _REGENERATED,
            text,
            low,
            (b"regenerat", b"rotat", b"reissu", b"recreat", b"reset", b"revok"),
        ):
            _value(m, add, "secret_assignment")
    if any(word in low for word in _WIFI_KEY_WORDS):
        for m in _at(
            _WIFI_KEY,
            text,
            low,
            (b"wifi", b"wi-fi", b"wlan", b"network", b"ssid", b"wpa", b"router"),
        ):
            _value(m, add, "password")
    if b"wifi" in low or b"wi-fi" in low or b"wlan" in low or b"ssid" in low:
        for m in _at(_WIFI_WORD_FIRST, text, low, _WIFI_WORDS):
            _value(m, add, "password")
        for m in _at(_WIFI_PAIR, text, low, (b"wifi", b"wi-fi", b"wlan", b"ssid")):
            _value(m, add, "password")
    if b"@" in low and (b"cred" in low or b"login" in low):
        for m in _at(_CREDS_AT, text, low, (b"creds", b"credentials", b"login")):
            _value(m, add, "password")
    _network(text, low, add)
    if b"successfully saved" in low:
        for m in _SAVED_SECRET.finditer(text):
            _value(m, add, "password", shaped=False)
    if b"define" in low:
        for m in _at(_DEFINE, text, low, (b"define",)):
            name = m.group("name")
            if name.upper().endswith(("_KEY", "_SALT")) and _generated(m, add):
                continue
            if _name_kind(name) is not None or name.upper().endswith("_SALT"):
                _value(m, add, "secret_assignment")


_DIRECTIVE_WORDS = (b"password", b"passwd", b"secret", b"token")
_DIRECTIVE_LEAD = 80  # characters a directive's name may start after its line does


# Wi-Fi passwords: a QR code's WIFI:T:WPA;S:ssid;P:password;; (";" escaped as "\;"),
# Windows' `netsh wlan show profile key=clear` (Key Content : ...), `wpa_passphrase ssid
# password`, and the line `nmcli -s -g 802-11-wireless-security.psk ...` prints.
_WIFI_QR = lazy(r"WIFI:(?:[^;\r\n]{0,64}+;){0,6}?P:(?P<bare>(?:\\.|[^;\\\r\n]){1,200}+);", re.I)
_NETSH_KEY = lazy(r"key content[ \t]*+:[ \t]*+(?P<bare>[^\r\n]{1,200}?)[ \t]*+(?:\r?\n|\Z)", re.I)
_WPA_PASSPHRASE = lazy(
    r"wpa_passphrase[ \t]++(?:\"[^\"\r\n]{1,64}\"|'[^'\r\n]{1,64}'|[^\s\"']{1,64}+)[ \t]++" + _VALUE
)
_NMCLI_PSK = lazy(
    r"nmcli[ \t][^\r\n]{0,200}?(?:-s|--show-secrets)[ \t][^\r\n]{0,200}?psk[^\r\n]{0,200}+\r?\n"
    r"(?P<bare>[^\s]{8,63}+)[ \t]*+(?:\r?\n|\Z)"
)


def _wifi(text: str, low: bytes, add: Add) -> None:
    for pattern, word in (
        (_WIFI_QR, b"wifi:"),
        (_NETSH_KEY, b"key content"),
        (_WPA_PASSPHRASE, b"wpa_passphrase"),
        (_NMCLI_PSK, b"nmcli"),
    ):
        for at in _hits(low, word):
            if (m := pattern.match(text, at)) is not None:
                _value(m, add, "password", shaped=False)


def _generated(m: re.Match[str], add: Add) -> bool:
    """Add a WordPress key or salt as its generator makes one (64 characters of letters,
    digits and punctuation, which may start with the "<" or "{" that a placeholder starts
    with): 32 characters or more of three kinds of character, not a placeholder's words
    (``<put your unique phrase here>``). True when added."""
    group = "dq" if m.group("dq") is not None else "sq"
    value = m.group(group)
    kinds = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() and c != " " for c in value),
        )
    )
    if len(value) < 32 or kinds < 3 or value.count(" ") * 8 > len(value):
        return False
    add((m.start(group), m.end(group), "secret_assignment"))
    return True


def _database_key(text: str, at: int, m: re.Match[str]) -> bool:
    """Does the key's word at `at` name a key of a database (klucz główny, clé
    primaire, Primärschlüssel), or give it a column's name (klucz to id_42)?  Neither
    is a secret; a key of a vendor's or of a Wi-Fi network is."""
    if _DB_KEY_AFTER.match(text, at) or _DB_KEY_BEFORE.search(text, max(0, at - 24), at):
        return True
    value = next(m.group(g) for g in ("dq", "sq", "bare") if m.group(g) is not None)
    return _COLUMN.fullmatch(value.rstrip(_TRAIL)) is not None


def _secret_kind(name: str) -> bool:
    """Does `name` name a secret (not merely a key, which is often a config key)?"""
    return _name_kind(name) not in (None, "key", "auth")


_BEFORE_WORDS = (b"use", b"with", b"set", b"try", b"enter", b"type")
_NAME_WORDS = (b"pass", b"secret", b"token", b"key", b"pwd", b"auth", b"cred")
_WORD_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_")


def _at(
    pattern: re.Pattern[str],
    text: str,
    low: bytes,
    words: tuple[bytes, ...],
    near: bytes = b"",
) -> Iterator[re.Match[str]]:
    """The matches of `pattern` where one of `words` starts a word (and, given `near`,
    that follows within 60 characters): found in the bytes, then matched there, rather
    than a scan of the whole text for each pattern."""
    starts = {
        at
        for word in words
        for at in _hits(low, word)
        if (not at or low[at - 1] not in _WORD_CHARS)
        and (not near or low.find(near, at, at + 60) >= 0)
    }
    for at in sorted(starts):
        if (m := pattern.match(text, at)) is not None:
            yield m


def _name_start(text: str, at: int) -> int:
    """Where the identifier holding position `at` starts."""
    while at and (text[at - 1].isalnum() or text[at - 1] == "_"):
        at -= 1
    return at


def _hits(low: bytes, word: bytes) -> list[int]:
    """Where `word` starts in `low`."""
    found = []
    at = low.find(word)
    while at >= 0:
        found.append(at)
        at = low.find(word, at + 1)
    return found


def _value(
    m: re.Match[str], add: Add, kind: str, *, shaped: bool = True, user_first: bool = False
) -> None:
    """Add the value `m` holds (in dq, sq or bare); `shaped`: only when it can be nothing
    but a credential, else when it is no placeholder; `user_first`: user:password."""
    group = next(g for g in ("dq", "sq", "bare") if m.groupdict().get(g) is not None)
    value, start, end = m.group(group), m.start(group), m.end(group)
    if group == "bare":
        stripped = value.rstrip(_TRAIL)
        value, end = stripped, end - (len(value) - len(stripped))
    if user_first:
        user, colon, rest = value.partition(":")
        if not colon:
            return
        value, start = rest, start + len(user) + 1
    if _skip_value(value) or value.startswith("$"):
        return
    if password_shaped(value) if shaped else _passwordish(value):
        add((start, end, kind))


def _cells(line: str) -> list[tuple[int, str]]:
    """A table row's cells, each with where it starts in the line (stripped)."""
    body = line.strip()
    offset = len(line) - len(line.lstrip())
    if body.startswith("|"):
        body, offset = body[1:], offset + 1
    if body.endswith("|"):
        body = body[:-1]
    out = []
    pos = 0
    for part in body.split("|"):
        lead = len(part) - len(part.lstrip())
        out.append((offset + pos + lead, part.strip()))
        pos += len(part) + 1
    return out


def _header_parts(name: str) -> list[str]:
    """The names a secret's column's header gives ("Password", "Password / token", "Token
    or key", "Password (plain)"); none when one of them names no secret ("User / role")."""
    name = _HEADER_NOTE.sub("", name.strip("`*_ \t"))
    parts = [part for part in _HEADER_JOIN.split(name) if part]
    if parts and all(_HEADER_NAME.match(part) for part in parts):
        return parts
    return []


def _tables(text: str, add: Add) -> None:
    lines = text.split("\n")
    starts = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line) + 1
    n = 0
    while n + 1 < len(lines):
        header, rule = lines[n], lines[n + 1]
        if "|" not in header or not _RULE_ROW.match(rule.strip()):
            n += 1
            continue
        names = _cells(header)
        # counted from the end too: text before the table may share the header's line
        columns = {
            i - len(names): not all(_KEY_HEADER.match(part) for part in parts)
            for i, (_, name) in enumerate(names)
            if (parts := _header_parts(name))
        }
        n += 2
        while n < len(lines) and "|" in lines[n]:
            cells = _cells(lines[n])
            for i, words in columns.items():
                if -i <= len(cells):
                    at, value = cells[i]
                    value = value.strip("`")
                    if _table_secret(value, words):
                        start = starts[n] + lines[n].index(value, at)
                        add((start, start + len(value), "password"))
            n += 1


# A row of a table drawn by a tool (mysql's | a | b |, doppler's and psql's box lines
# │ a │ b │) whose key cell names a secret: the next cell is its value.
_ROW_START = lazy(r"^[ \t]*+[|\u2502┃║]", re.M)
_ROW_SPLIT = lazy(r"[|\u2502┃║]")
_ROW_NAME = lazy(r"[A-Za-z_][\w.-]{1,80}", re.ASCII)


def _keyed_rows(text: str, add: Add) -> None:
    for row in _ROW_START.finditer(text):
        end = text.find("\n", row.end())
        end = len(text) if end < 0 else end
        pos = row.end()
        cells = []
        for sep in _ROW_SPLIT.finditer(text, pos, end):
            cells.append((pos, sep.start()))
            pos = sep.end()
        for (ns, ne), (vs, ve) in zip(cells, cells[1:], strict=False):
            name, value = text[ns:ne].strip(), text[vs:ve].strip()
            if not value or " " in value or not _ROW_NAME.fullmatch(name):
                continue
            if _name_kind(name) is None or _skip_value(value):
                continue
            if (
                _credential_shaped(value)
                or passphrase(value)
                or (len(value) >= 16 and _credential_like(value))
            ):
                start = text.index(value, vs)
                add(
                    (
                        start,
                        start + len(value),
                        "password" if "pass" in name.lower() else "secret_assignment",
                    )
                )


def _table_secret(value: str, words: bool = True) -> bool:
    """A cell of a password column that gives one: one word, not a placeholder, not a
    word of prose ("(in the vault)", "same", "none"); words joined as a passphrase only
    under a password's column (`words`), not a key's, where they are a name
    (`memory.summarize.enabled`)."""
    if len(value) < 4 or " " in value or value.startswith(("(", "-", "—")):
        return False
    return not _skip_value(value) and (_credential_shaped(value) or (words and passphrase(value)))


# Network gear and its tools, where the secret follows a keyword of its own:
# snmpwalk -c <community>, snmpd.conf's rocommunity <community>, SNMPv3's -A/-X pass
# phrases; iwconfig's key s:<WEP key>; OpenWrt's option key '<psk>'; IKE's crypto isakmp
# key <psk> and pre-shared-key <psk>; RADIUS's and TACACS+'s shared key; Junos's $9$
# (reversible) secrets; PPP's chap-secrets and pap-secrets lines.
_SNMP_TOOL = lazy(
    r"\bsnmp(?:walk|bulkwalk|get|getnext|bulkget|set|table|trap|inform|status|df|netstat|delta"
    r"|test)\b[^\r\n|;&]*+"
)
_SNMP_FLAG = lazy(r"(?<=[ \t])-(?P<flag>[cAX])[ \t]*(?P<bare>[^\s\"']{4,64})")
_SNMPD = lazy(
    r"^[ \t]*(?:(?:ro|rw)community6?|trapcommunity|com2sec6?[ \t]+\S+[ \t]+\S+)[ \t]+"
    r"(?P<bare>[^\s]{4,64})",
    re.M | re.IGNORECASE,
)
# iwconfig's command runs to the end of its line or of its shell command; its key is found
# by hand, from each " key"/" enc" in that run in turn: one pattern that skipped lazily
# over the run to the key read the rest of the run again from every "iwconfig" in it, which
# grew with the square of a long line of them.
_IWCONFIG = lazy(r"\biwconfig\b")
_IWCONFIG_RUN = lazy(r"[^\r\n|;&]*+")
_IWCONFIG_CUE = lazy(r"(?=[ \t](?:key|enc)[ \t])")
_IWCONFIG_KEY = lazy(
    r"[ \t](?:key|enc)[ \t]+(?:\[[1-4]\][ \t]+)?"
    r"(?:s:(?P<bare>[^\s]{1,64})|(?P<hex>[0-9A-Fa-f]{4}(?:-?[0-9A-Fa-f]{2,4}){2,15}))(?![^\s])"
)
_UCI_OPTION = lazy(
    r"^[ \t]*option[ \t]+(?:key|password|psk|wpa_passphrase|sae_password|auth_secret"
    r"|acct_secret|priv_key_pwd|key[1-4])[ \t]+" + _VALUE,
    re.M,
)
_SHARED_KEY = lazy(
    r"(?:\bcrypto[ \t]+isakmp[ \t]+key|(?<![\w-])pre-shared-key(?:[ \t]+(?:local|remote))?"
    r"|\bkey-string|\b(?:radius|tacacs)-server\b[^\r\n]{0,80}?[ \t]key)"
    r"[ \t]+(?:[067][ \t]+)?(?P<bare>[^\s\"']{4,128})",
    re.IGNORECASE,
)
_JUNOS_SECRET = lazy(r"(?<![\w$])\$9\$[A-Za-z0-9./$-]{8,200}")
_PPP_SECRET = lazy(
    r"^[ \t]*(?:\"[^\"\r\n]{1,64}\"|[^\s#\"]{1,64})[ \t]+(?:\*|\"[^\"\r\n]{0,64}\"|[^\s\"]{1,64})"
    r"[ \t]+(?:\"(?P<dq>[^\"\r\n]{1,100})\"|(?P<bare>[^\s\"]{1,100}))(?:[ \t][^\r\n]*)?$",
    re.M,
)


def _iwconfig_keys(text: str) -> Iterator[re.Match[str]]:
    """The keys given to iwconfig: after each "iwconfig", the first " key"/" enc" on the
    rest of its command that a key follows. A run with none has none for a later
    "iwconfig" in it either, so the search goes on after the run; after a key, from it."""
    pos = 0
    while (word := _IWCONFIG.search(text, pos)) is not None:
        run = _IWCONFIG_RUN.match(text, word.end())
        end = run.end() if run is not None else word.end()
        pos = end
        for cue in _IWCONFIG_CUE.finditer(text, word.end(), end):
            if (m := _IWCONFIG_KEY.match(text, cue.start())) is not None:
                yield m
                pos = m.end()
                break


_PPP_WORDS = (b"chap-secrets", b"pap-secrets", b"using chap", b"using pap")


def _network(text: str, low: bytes, add: Add) -> None:
    if b"snmp" in low:
        for cmd in _SNMP_TOOL.finditer(text):
            for m in _SNMP_FLAG.finditer(text, cmd.start(), cmd.end()):
                if m.group("flag") != "c" or m.group("bare").lower() not in _SNMP_DEFAULTS:
                    _value(m, add, "password", shaped=False)
    if b"community" in low or b"com2sec" in low:
        for m in _SNMPD.finditer(text):
            if m.group("bare").lower() not in _SNMP_DEFAULTS:
                _value(m, add, "password", shaped=False)
    if b"iwconfig" in low:
        for m in _iwconfig_keys(text):
            group = "bare" if m.group("bare") is not None else "hex"
            if not _skip_value(m.group(group)):
                add((m.start(group), m.end(group), "password"))
    if b"option" in low:
        for m in _UCI_OPTION.finditer(text):
            _value(m, add, "password", shaped=False)
    if b"key" in low:
        for m in _at(
            _SHARED_KEY, text, low, (b"crypto", b"pre-shared", b"key-string", b"radius", b"tacacs")
        ):
            _value(m, add, "password", shaped=False)
    if b"$9$" in low:
        for m in _JUNOS_SECRET.finditer(text):
            add((m.start(), m.end(), "password"))
    if any(word in low for word in _PPP_WORDS):
        for m in _PPP_SECRET.finditer(text):
            _value(m, add, "password", shaped=False)

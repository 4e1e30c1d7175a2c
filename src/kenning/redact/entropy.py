"""The backstop: long random-looking runs, whatever their format.

Runs of 32 or more characters of ``[A-Za-z0-9+/_-]`` (plus ``=`` padding) are
reported when they look random; see ``kenning.redact`` for the tests a run must pass.
What is public by nature is left alone before any run is judged: certificates and
public keys (PEM blocks, ``ssh-ed25519 AAAA...`` lines, base64 DER certificates),
base64 that decodes to plain text (test fixtures), and Google Docs and Drive ids.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterator

from kenning.redact import formats
from kenning.redact.lazy import lazy

_F = re.ASCII
_FI = re.ASCII | re.IGNORECASE
_Span = tuple[int, int, str]
_DIGIT = lazy(r"[0-9]", _F)


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Runs of token characters, [A-Za-z0-9+/_-]{32,} plus "=" padding, are found on bytes.
_MIN_RUN = 32
_RUN_NEEDLE = b"a" * _MIN_RUN
_RUN_CHARS = string.ascii_letters + string.digits + "+/_-"
_RUN_BYTES = bytes(ord("a") if chr(b) in _RUN_CHARS else ord(" ") for b in range(256))
_NON_HEX_BYTES = bytes(
    ord("n") if chr(b) in _RUN_CHARS and chr(b) not in string.hexdigits + "-" else ord(" ")
    for b in range(256)
)
_HEX_RUN = lazy(r"(?:0x)?[0-9a-fA-F]++(?:[-_/+][0-9a-fA-F]++)*+", _F)
# (a version is pure too: the v2 of a cache key, v2-deps-<sha1>)
_PURE_PART = lazy(r"(?:0x)?[0-9a-fA-F]*|[A-Za-z]*|[0-9]*|[vV][0-9]{1,3}", _F)
_PART_SEP = lazy(r"[-_/+]", _F)
_SRI = lazy(r"sha(?:256|384|512)-", _F)
_PATH_SEGMENT = lazy(r"[a-z0-9._-]*[a-z]{2}[a-z0-9._-]*", _F)
_LETTER_RUNS = lazy(r"[a-z]{2,}", _F)
_VOWEL = lazy(r"[aeiouy]", _F)
_CONSONANTS4 = lazy(r"[b-df-hj-np-tv-xz]{4}", _F)
# The hundred most frequent letter pairs of English text.
_COMMON_PAIRS = _wordset(
    """
    th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou
    io le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di
    fo ho pe ec pr no ct us ac ot il tr ly nc et ut ss so rs un lo wa ge ie wh ee wi em
    ad ol rt po we na ul ni ts mo ow pa im mi ai sh ir su id os iv
    """
)
_MIN_ENTROPY = 3.8
_MAX_WORDINESS = 0.4
_SAMPLE = 512  # long runs (base64 blobs) are judged on their first _SAMPLE characters
_MAX_PATH = 1024
_C_LOG_C = (0.0, *(c * math.log2(c) for c in range(1, _SAMPLE + 1)))
_UPPER = lazy(r"[A-Z]", _F)
_LOWER = lazy(r"[a-z]", _F)


def _runs(raw: bytes, mapped: bytes, non_hex: bytes, lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """Where the runs of 32+ token characters are in ``raw[lo:hi]`` (``raw`` has one byte
    per character of the text), with up to two "=" of padding, leaving out runs of
    nothing but hex digits and "-" (hashes, UUIDs), which are never secrets.  The
    scanning is done by bytes methods: ``mapped`` has "a" for every token byte, so a
    run starts where a substring search finds 32 of them; ``non_hex`` has "n" for every
    token byte that is not a hex digit or "-"."""
    start = mapped.find(_RUN_NEEDLE, lo, hi)
    while start >= 0:
        end = mapped.find(b" ", start, hi)
        if end < 0:
            end = hi
        if non_hex.find(b"n", start, end) >= 0:
            stop = end  # "=" padding, as long as no token character follows it
            while stop < hi and stop - end < 2 and raw[stop] == 61:  # "="
                stop += 1
            while stop > end and stop < hi and mapped[stop] == 97:  # "a"
                stop -= 1
            yield start, stop
        start = mapped.find(_RUN_NEEDLE, end, hi)


MIN_GAP = _MIN_RUN


class Scanner:
    """The entropy rule over one text: the byte translations are made once, and each gap
    between the structured spans is scanned with them."""

    def __init__(self, text: str, raw: bytes, secret: Callable[[str], bool]) -> None:
        self.text = text
        self.raw = raw
        self.mapped = raw.translate(_RUN_BYTES)
        self.non_hex = raw.translate(_NON_HEX_BYTES)
        self.secret = secret  # does a decoded text hold a secret?

    def spans(self, lo: int, hi: int, out: list[_Span]) -> None:
        """Add the random-looking runs of ``text[lo:hi]`` to ``out``."""
        text = self.text
        for begin, stop in _runs(self.raw, self.mapped, self.non_hex, lo, hi):
            start = begin
            if begin and text[begin - 1] == "\\" and text[begin] in "nrt":
                start += 1  # a JSON string's escaped line break: "...\nYnVsYSB0aGlu..."
            if begin and text[begin - 1] == ":":
                while start < stop and text[start] == "/":
                    start += 1  # the slashes of "://" are not part of what follows
            if stop - start < _MIN_RUN:
                continue
            run = text[start:stop]
            if _public_id(text, start, run) or _SRI.match(run):
                continue  # (an SRI digest may hold a "/" that reads as a path's)
            if start > begin and _public_id(text, begin, text[begin:stop]):
                continue  # a fingerprint whose base64 starts with "/": SHA256:/dp8q...
            if "/" in run and path_like(run):
                pos = start
                google = "google.com/" in text[max(0, start - 80) : stop]
                previous = ""
                for segment in run.split("/"):
                    if (
                        len(segment) >= _MIN_RUN
                        and looks_random(segment)
                        and not _drive_id(segment)
                        and not (previous == "store" and "nix/store/" in run)  # a hash
                        and not (google and previous in ("d", "folders"))  # a document id
                        and not self._plain(segment)
                    ):
                        out.append((pos, pos + len(segment), "high_entropy"))
                    pos += len(segment) + 1
                    previous = segment
            elif looks_random(run) and not self._plain(run):
                out.append((start, stop, _der_kind(run)))

    def _plain(self, run: str) -> bool:
        """Base64 of plain text (a test fixture, a readable JSON document) that holds no
        secret of its own."""
        decoded = _decoded_text(run)
        return decoded is not None and not self.secret(decoded)


# --- what is public by nature ------------------------------------------------------------

# PEM blocks of certificates and public keys: nothing in them is a secret.
_PUBLIC_PEM = lazy(
    r"-----BEGIN (?:[A-Z0-9]+ )*(?:CERTIFICATE|PUBLIC KEY|PUBLIC KEY BLOCK|X509 CRL|PKCS7|CMS"
    r"|CERTIFICATE REQUEST|NEW CERTIFICATE REQUEST|PARAMETERS|SIGNATURE|MESSAGE)-----"
    r"(?:[A-Za-z0-9+/=\s:,.\\]|-(?!----))*+"
    r"(?:-----END [A-Z0-9 ]{0,60}-----)?",
    _F,
)
_SSH_PUBLIC = lazy(
    r"(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp[0-9]{3}|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)"
    r"@openssh\.com|ssh-(?:rsa|ed25519)-cert-v01@openssh\.com)[ \t]+AAAA[A-Za-z0-9+/]++={0,3}",
    _F,
)


# The public half of a PuTTY key file, and images and fonts inlined as data: URIs.
_PUTTY_PUBLIC = lazy(
    r"Public-Lines:[ \t]*[0-9]{1,3}[ \t]*\r?\n(?:[A-Za-z0-9+/=]{4,}+(?:\r?\n|\Z))+", _F
)
_PUTTY_MAC = lazy(r"Private-MAC:[ \t]*[0-9a-f]{40,128}", _F)
_DATA_URI = lazy(
    r"data:(?:image|font|audio|video)/[A-Za-z0-9.+-]{1,40}(?:;[A-Za-z0-9=._-]{1,40})*;base64,"
    r"(?P<data>[A-Za-z0-9+/=]++)",
    _F,
)


# Values encrypted by SOPS (the data, its IV and tag are ciphertext, not secrets), and
# base64 values assigned to a public key's name (WireGuard's PublicKey = ..., peer: ..., a VAPID or
# JWK "public_key": ...).
_SOPS = lazy(
    r"ENC\[[A-Z0-9_]{3,20},data:[A-Za-z0-9+/=]*+,iv:[A-Za-z0-9+/=]++,tag:[A-Za-z0-9+/=]++"
    r",type:[a-z]{1,10}\]",
    _F,
)
# jasypt's ENC(...) (Spring's encrypted properties): base64 ciphertext, useless without
# the encryptor's password, which is not in it.
_JASYPT = lazy(r"(?<![A-Za-z0-9_])ENC\([A-Za-z0-9+/_-]{16,4096}={0,2}\)", _F)


def _vendor_token(value: str) -> bool:
    """Does ``value`` hold a token of a vendor's format (ghp_..., AKIA..., xox...)? Then
    ENC(...) around it is no ciphertext but a secret in a ciphertext's dress."""
    found: list[tuple[int, int, str]] = []
    formats.find_formats(value, value.encode("ascii", "replace"), found.append)
    return bool(found)


# Pulumi's encrypted config values (secure: v1:<salt>:<ciphertext>), opened only with the
# stack's passphrase or key service, which is not in them.
_PULUMI_SECURE = lazy(
    r"(?<![A-Za-z0-9_])secure[\"']?[ \t]*:[ \t]*[\"']?(?P<v>v1:[A-Za-z0-9+/]{8,64}={0,2}"
    r":[A-Za-z0-9+/]{8,}+={0,2})",
    _F,
)
# A SealedSecret's encryptedData (Bitnami's sealed-secrets): each value is ciphertext only
# the controller's private key opens, made to be committed.
_SEALED_KIND = lazy(r"^[ \t]*\"?kind\"?[ \t]*:[ \t]*\"?SealedSecret\b", _F | re.MULTILINE)
_SEALED_YAML = lazy(r"^(?P<indent>[ \t]*)encryptedData:[ \t]*\r?\n", _F | re.MULTILINE)
_SEALED_JSON = lazy(r"\"encryptedData\"[ \t]*:[ \t]*\{[^{}]{0,100000}\}", _F)
# What kubeseal writes for each value: one long run of base64 (RSA-OAEP plus AES-GCM,
# some hundreds of characters, "Ag..."). Only such a run is left: a token of a vendor's
# format, a URL with its password or a header in an encryptedData block is no ciphertext.
_SEALED_VALUE = lazy(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{100,}={0,2}(?![A-Za-z0-9+/=_-])", _F)


def _sealed(text: str) -> list[tuple[int, int]]:
    if _SEALED_KIND.search(text) is None:
        return []
    blocks = [m.span() for m in _SEALED_JSON.finditer(text)]
    for m in _SEALED_YAML.finditer(text):
        indent = len(m.group("indent"))
        pos = m.end()
        while pos < len(text):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = text[pos:end]
            if line.strip() and len(line) - len(line.lstrip(" \t")) <= indent:
                break  # the block's end: a key as far in as encryptedData
            blocks.append((pos, end))
            pos = end + 1
    return [m.span() for start, end in blocks for m in _SEALED_VALUE.finditer(text, start, end)]


_PUBLIC_NAMED = lazy(
    r"(?<![A-Za-z])(?:public[ _-]?key|pubkey|peer)s?[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"[A-Za-z0-9+/_-]{32,}+={0,2}(?![A-Za-z0-9+/=_-])",
    _FI,
)


# A JSON Web Key: one object with "kty". Its public members (n, e, x, y, x5c) are
# public when it holds no private one ("d", "p", "q", "dp", "dq", "qi", "k").
_JWK = lazy(r"\{[^{}]*\"kty\"[^{}]*\}", _F)
_JWK_PRIVATE = lazy(r"\"(?:d|p|q|dp|dq|qi|k)\"[ \t]*:", _F)
_JWK_PUBLIC = lazy(r"\"(?:n|e|x|y)\"[ \t]*:[ \t]*\"(?P<v>[A-Za-z0-9_-]{1,2048})\"", _F)


def _jwk_public(text: str) -> list[tuple[int, int]]:
    out = []
    for key in _JWK.finditer(text):
        if _JWK_PRIVATE.search(key.group()) is None:
            base = key.start()
            out += [
                (base + m.start("v"), base + m.end("v")) for m in _JWK_PUBLIC.finditer(key.group())
            ]
    return out


def public_spans(text: str, raw: bytes | None = None, low: bytes = b"") -> list[tuple[int, int]]:
    """Where the text holds certificates, public keys, signatures, inlined media and
    ciphertext made to be committed (SOPS, jasypt, a SealedSecret's encryptedData).
    (``raw``: the text as one byte a character, where the literals are found faster;
    ``low``: the same lower-cased.)"""
    if raw is None:
        raw = text.encode("ascii", "replace")
    found: list[tuple[int, int]] = []
    if b"-----BEGIN" in raw:
        found += [m.span() for m in _PUBLIC_PEM.finditer(text)]
    if b"AAAA" in raw:
        found += [m.span() for m in _SSH_PUBLIC.finditer(text)]
    if b"Public-Lines:" in raw:
        found += [m.span() for m in _PUTTY_PUBLIC.finditer(text)]
        found += [m.span() for m in _PUTTY_MAC.finditer(text)]
    if b";base64," in raw:
        found += [m.span() for m in _DATA_URI.finditer(text) if _media(m.group("data"))]
    if b"ENC[" in raw:
        found += [m.span() for m in _SOPS.finditer(text)]
    if b"ENC(" in raw:
        found += [m.span() for m in _JASYPT.finditer(text) if not _vendor_token(m.group()[4:-1])]
    if b"secure" in raw and b"v1:" in raw:
        found += [m.span("v") for m in _PULUMI_SECURE.finditer(text)]
    if b"SealedSecret" in raw and b"encryptedData" in raw:
        found += _sealed(text)
    if b'"kty"' in raw:
        found += _jwk_public(text)
    low = low or raw.lower()
    for needle in (b"pub", b"peer"):  # (a WireGuard peer is named by its public key)
        at = low.find(needle)
        while at >= 0:
            if (m := _PUBLIC_NAMED.match(text, at)) is not None:
                found.append(m.span())
            at = low.find(needle, at + len(needle))
    return found


# The first bytes of the image, font and sound formats that pages inline.
_MAGIC = (
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"RIFF",
    b"wOFF",
    b"wOF2",
    b"OTTO",
    b"\x00\x01\x00\x00",
    b"\x00\x00\x01\x00",
    b"<svg",
    b"<?xml",
    b"ID3",
    b"OggS",
    b"fLaC",
)


def _media(data: str) -> bool:
    """Does an inlined data: URI's base64 start as an image, font or sound does (a random
    secret labelled image/png does not)?"""
    head = _b64_bytes(data, 16)
    return head is not None and (head.startswith(_MAGIC) or head[4:8] == b"ftyp")


# Google Docs, Sheets, Slides and Drive ids: 33 or 44 characters starting with 1, or
# any run right after /d/, /folders/ or ?id= of a Google URL.
_GOOGLE_ID_BEFORE = lazy(r"(?:google\.com/[A-Za-z0-9/._-]{0,60}?/(?:d|folders)/|[?&]id=)\Z", _F)


def _drive_id(run: str) -> bool:
    return len(run) in (33, 44) and run[0] == "1" and "+" not in run and "/" not in run


# bech32 public keys and addresses (age1..., bc1...), SSH key fingerprints; IPFS content
# ids (CIDv1 in base32, bafy..., and CIDv0, Qm and 44 base58), which are hashes
_BECH32 = lazy(r"(?:age|bc|tb|ltc|npub)1[02-9ac-hj-np-z]{20,}", _F)
# An age recipient (a public key): age1 and 58 lower-case letters and digits; the secret
# one is AGE-SECRET-KEY-1 in capitals.
_AGE_RECIPIENT = lazy(r"age1[0-9a-z]{58}", _F)
# Twilio's resource ids: two capitals (AC an account, SM a message, CA a call, PN a
# number, MG a service, SK an API key...) and 32 hex; the auth token has no prefix.
TWILIO_SID = lazy(r"[A-Z]{2}[0-9a-f]{32}", _F)
# A ULID, or a run made like one (26 capitals and digits, a time first: 01J...), after
# the words of a name: deployment-01J0..., release_01H...
_ULID_RUN = lazy(r"(?:[a-z][a-z0-9]*+[-_])*+0[0-7][0-9A-Z]{24}", _F)
_CID = lazy(r"ba[fg][a-z2-7]{50,}|Qm[1-9A-HJ-NP-Za-km-z]{44}", _F)
# SSH key fingerprints, Go module hashes (go.sum's "h1:") and certificate pins
# ("sha256/..." in OkHttp, HPKP): base64 digests
_FINGERPRINT_BEFORE = ("SHA256:", "sha256:", "SHA1:", "MD5:", " h1:", '"h1:', "sha256/")


# A value named as an identifier (an "id" is never the secret; a "key id" names a key):
# "id": "chatcmpl-...", x-amz-id-2: ..., Change-Id: I..., BuildID=..., requestId
_ID_NAME = lazy(
    r"(?:(?<![A-Za-z0-9])[Ii][Dd]|(?<=[a-z])Id|(?<=[A-Za-z])ID|(?<=[-_.])(?:id|ID|Id)(?:-2)?)"
    r"[\"']?[ \t]*[:=][ \t]*[\"']?\Z",
)
# Content addresses, which are hashes: ipfs://..., /ipfs/...
# domain verification tokens, which are published in DNS (google-site-verification=), and
# CAPTCHA site keys, which web pages hold (data-sitekey="..."), and an OAuth PKCE
# code_challenge, the digest of a verifier sent in the browser's authorize URL, and its
# state and nonce (values the client made to match the answer, which grant nothing), a
# cache key (a CI's hash of lock files) and a trace context (grpc-trace-bin, traceparent)
_PUBLIC_BEFORE = lazy(
    r"(?:ipfs://|/ipfs/|ipns://|site-verification=|[?&](?:state|nonce)="
    r"|(?:site[-_]?key|code[-_]?challenge|cache[-_ ]?key|trace[-_]?(?:bin|context|parent|state))"
    r"[\"']?[ \t]*[:=][ \t]*[\"']?)\Z",
    _FI,
)
# A content's hash named as one (NuGet's "contentHash", npm's "integrity", a "checksum",
# "sha256sum", "digest"): a hash of what is public, unless its name says it hashes a
# credential (password_hash, token_digest), which another rule judges.
_HASH_NAME = lazy(
    r"(?<![A-Za-z0-9])(?P<name>[A-Za-z0-9_.-]{0,40}?)"
    r"(?:hash|digest|checksum|integrity|sha(?:1|224|256|384|512)(?:sum)?|md5(?:sum)?)"
    r"[\"']?[ \t]*[:=][ \t]*[\"']?\Z",
    _FI,
)
_CREDENTIAL_PART = lazy(r"pass|pwd|secret|token|auth|cred|api[-_]?key|private", _FI)
_SIGNATURE_TAG = lazy(r"(?<![A-Za-z])bh?=\Z", _F)


# Keys made to be public (Stripe's publishable keys and Mapbox's public tokens go into
# web pages), and Stripe's object ids (a price, a customer), which name, not grant.
PUBLIC_PREFIXES = (
    "pk_live_",
    "pk_test_",
    "pk.eyJ",
    "price_",
    "prod_",
    "cus_",
    "sub_",
    "acct_",
    "evt_",
    "plan_",
)

# Supabase's publishable key, for the browser (sb_secret_ is a secret): its own alphabet
# and length only, so that sb_publishable_ before anything else does not hide a secret.
_SB_PUBLISHABLE = lazy(r"sb_publishable_[A-Za-z0-9_-]{20,64}(?![A-Za-z0-9+/=.~])", _F)


def public_prefix(value: str) -> bool:
    """Does ``value`` start as a key public by design (a publishable key, pk.eyJ...)?"""
    return value.startswith(PUBLIC_PREFIXES) or (
        value.startswith("sb_publishable_") and _SB_PUBLISHABLE.match(value) is not None
    )


def _named_public(text: str, start: int) -> bool:
    """Does what comes just before the run at ``start`` make it public?  (Only a run
    after ``:``, ``=`` or a line break is looked at more closely.)"""
    before = text[max(0, start - 3) : start]
    if ":" in before or "=" in before:
        if _ID_NAME.search(text, max(0, start - 40), start) or _PUBLIC_BEFORE.search(
            text, max(0, start - 24), start
        ):
            return True
        if (
            hashed := _HASH_NAME.search(text, max(0, start - 64), start)
        ) is not None and not _CREDENTIAL_PART.search(hashed.group("name")):
            return True
        if _SIGNATURE_TAG.search(text, max(0, start - 8), start) and (
            "DKIM-Signature" in text[max(0, start - 1000) : start]
            or "ARC-" in text[max(0, start - 1000) : start]
        ):
            return True  # a mail's DKIM or ARC signature and body hash: b=..., bh=...
    elif before.endswith("\n"):
        line, lo = start - 1, max(0, start - 201)
        previous = text[text.rfind("\n", lo, line) + 1 or lo : line]
        if previous.startswith("untrusted comment:") and "secret key" not in previous:
            return True  # a minisign or signify public key or signature
    return False


# A Solana (or other base58) address: 32 to 44 base58 characters, named as an address or
# by its coin just before it ("SOL: 7xKX...", "deposit address 9WzD..."); a Solana
# secret key is 87 or 88.
_BASE58_ADDRESS = lazy(r"[1-9A-HJ-NP-Za-km-z]{32,44}", _F)
_ADDRESS_BEFORE = lazy(
    r"(?<![A-Za-z])(?:sol|solana|address|addr|pubkey|recipient|mint|account|wallet[ _-]address)"
    r"(?![A-Za-z])[^\r\n:=]{0,24}[:=]?[ \t\"'`]*\Z",
    _FI,
)


_ETAG_BEFORE = lazy(
    r"(?<![A-Za-z-])(?:etag|if-none-match|if-match)[\"']?[ \t]*[:=][ \t]*[\"']?(?:W/)?[\"']?\Z", _FI
)


# 32 bytes in base64, as WireGuard writes its keys, and the words near one that say it
# is the public half (the output of `wg pubkey`, `wg show`, `cat publickey`).
_WG_KEY = lazy(r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=", _F)
_WG_NEAR = lazy(r"(?<![A-Za-z])(?:wg|wireguard|pubkey|public(?:[ _-]?key)?|peers?)(?![a-z])", _FI)
_WG_PRIVATE = lazy(r"genkey|private", _FI)


def _printed_public_key(text: str, start: int, run: str) -> bool:
    """A WireGuard public key alone on its line, under a command or a word that says it
    is public, not under one that makes or reads a private key (which `printed` finds)."""
    if len(run) != 44 or not _WG_KEY.fullmatch(run):
        return False
    line_start = text.rfind("\n", max(0, start - 200), start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    if text[line_start:start].strip() or text[start + 44 : line_end].strip() or not line_start:
        return False
    previous = text[text.rfind("\n", max(0, line_start - 201), line_start - 1) + 1 : line_start]
    if "pubkey" in previous:
        return True  # `wg pubkey < privatekey` prints the public half of a private key
    if _WG_PRIVATE.search(previous):
        return False
    return _WG_NEAR.search(text, max(0, line_start - 400), line_start) is not None


def _public_id(text: str, start: int, run: str) -> bool:
    if _printed_public_key(text, start, run):
        return True
    if _drive_id(run) or _BECH32.fullmatch(run) or _CID.fullmatch(run):
        return True
    if _AGE_RECIPIENT.fullmatch(run) or TWILIO_SID.fullmatch(run) or _ULID_RUN.fullmatch(run):
        return True
    if _BASE58_ADDRESS.fullmatch(run) and _ADDRESS_BEFORE.search(text, max(0, start - 40), start):
        return True
    if _named_public(text, start):
        return True
    if public_prefix(run) or _decoded_public(run):
        return True
    if run.endswith(("EXAMPLE", "EXAMPLEKEY")):
        return True  # AWS's documentation keys: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
    if _ETAG_BEFORE.search(text, max(0, start - 40), start):
        return True  # an HTTP entity tag: ETag: W/"820a-4iXF...", If-None-Match: "..."
    if text.startswith(".apps.googleusercontent.com", start + len(run)):
        return True  # an OAuth client id, which web pages hold
    if run.startswith("eyJ") and text.endswith("pk.", max(0, start - 3), start):
        return True  # a Mapbox public token: pk.eyJ...
    if run.startswith(("sha256/", "sha1/")) and len(run.partition("/")[2].rstrip("=")) in (27, 43):
        return True  # a certificate pin, the run holding its "sha256/"
    if text.endswith(_FINGERPRINT_BEFORE, max(0, start - 7), start) and len(run.rstrip("=")) in (
        27,
        43,
    ):
        return True
    if "google.com/" in text[max(0, start - 100) : start] or text[
        max(0, start - 4) : start
    ].endswith("id="):
        return _GOOGLE_ID_BEFORE.search(text, max(0, start - 100), start) is not None
    return False


def _b64_bytes(run: str, limit: int = 96) -> bytes | None:
    core = run.rstrip("=")[:limit]
    core = core[: len(core) - len(core) % 4]
    if len(core) < 16:
        return None
    try:
        if "-" in core or "_" in core:
            return base64.urlsafe_b64decode(core)
        return base64.b64decode(core, validate=True)
    except (binascii.Error, ValueError):
        return None


# What base64 decodes to when it is public: a PEM certificate or public key (a
# kubeconfig's certificate-authority-data), an image, font or sound (a ConfigMap's
# binaryData), a DER public key (DKIM's p=, a JWK's x5c).
_PUBLIC_HEADS = (
    b"-----BEGIN CERTIFICATE",
    b"-----BEGIN PUBLIC KEY",
    b"-----BEGIN RSA PUBLIC KEY",
    b"-----BEGIN PGP PUBLIC KEY",
    b"ssh-",
    *_MAGIC,
)


# The first base64 character of each head above (and of DER's SEQUENCE, and of the
# size before "ftyp"): a run starting otherwise is not decoded at all.
_PUBLIC_FIRST = frozenset(
    base64.b64encode(head[:1] + b"\0\0").decode()[0]
    for head in (*_PUBLIC_HEADS, b"0", b"\0", b"\n")
)


def _decoded_public(run: str) -> bool:
    if len(run) < 24 or run[0] not in _PUBLIC_FIRST:
        return False
    head = _b64_bytes(run, 48)
    if head is None:
        return False
    if head[:1] == b"\n":
        return _proto_descriptor(_b64_bytes(run, 96) or b"")
    return head.startswith(_PUBLIC_HEADS) or head[4:8] == b"ftyp" or _der_public_key(head)


_PROTO_NAME = lazy(rb"[A-Za-z0-9_./-]{1,64}\.proto", _F)


def _proto_descriptor(head: bytes) -> bool:
    """A serialized protobuf file descriptor, as generated code embeds one: field 1 (tag
    0x0A) is the name of its .proto file."""
    size = head[1] if len(head) > 1 else 0
    return 6 < size < 0x80 and _PROTO_NAME.fullmatch(head[2 : 2 + size]) is not None


def _der_length_end(head: bytes, at: int) -> int:
    """Where a DER element's contents start, its tag at `at`; -1 past the bytes."""
    if at + 1 >= len(head):
        return -1
    size = head[at + 1]
    return at + 2 + (size & 0x7F if size & 0x80 else 0)


def _der_public_key(head: bytes) -> bool:
    """A DER SubjectPublicKeyInfo: SEQUENCE { SEQUENCE { OID ... } BIT STRING }; a
    private key has an INTEGER version where the inner SEQUENCE is."""
    if not head or head[0] != 0x30:
        return False
    inner = _der_length_end(head, 0)
    if inner < 0 or inner >= len(head) or head[inner] != 0x30:
        return False
    oid = _der_length_end(head, inner)
    return 0 <= oid < len(head) and head[oid] == 0x06


def _der_kind(run: str) -> str:
    """A base64 DER private key (``MII...`` with version 0 first) is a private key."""
    if run.startswith("MII"):
        head = _b64_bytes(run, 24)
        if head is not None and len(head) >= 7 and head[4:7] == b"\x02\x01\x00":
            return "private_key"
    return "high_entropy"


def _der_certificate(run: str) -> bool:
    """A base64 DER certificate: SEQUENCE { SEQUENCE { [0] { INTEGER 2 } ..."""
    head = _b64_bytes(run, 24)
    return (
        head is not None
        and len(head) >= 13
        and head[0] == 0x30
        and head[1] == 0x82
        and head[4] == 0x30
        and head[5] == 0x82
        and head[8:13] == b"\xa0\x03\x02\x01\x02"
    )


_PRINTABLE = frozenset(range(32, 127)) | {9, 10, 13}


def decoded_printable(run: str) -> str | None:
    """What a base64 run (its first _SAMPLE characters, standard or URL-safe alphabet)
    decodes to, when every byte of it is printable text; else None. One cut for every
    rule that reads a run this way, so they ask `engine.holds_secret` the same question
    and it answers once."""
    core = run.rstrip("=")[:_SAMPLE]
    core = core[: len(core) - len(core) % 4]
    try:
        if "-" in core or "_" in core:
            data = base64.urlsafe_b64decode(core)
        else:
            data = base64.b64decode(core, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not data or any(b not in _PRINTABLE for b in data):
        return None
    return data.decode("ascii")


def _decoded_text(run: str) -> str | None:
    """The text a base64 run decodes to, when it is plainly text: printable, with spaces
    or markup, and not a lone ``user:password`` pair."""
    decoded = decoded_printable(run)
    if decoded is None:
        return None
    fields = decoded.count("=") >= 2 and "&" in decoded  # a query: user_id=42&plan=pro
    if decoded.count(" ") < 2 and decoded[:1] not in "{[<" and not fields:
        return None  # one word or a user:password pair: not plainly text
    return decoded


@functools.lru_cache(maxsize=1024)
def path_like(run: str) -> bool:
    """A run with a lower-case word as one of its ``/`` segments is a path or URL.
    Runs longer than any sensible path are base64 blobs, whatever their segments."""
    if len(run) > _MAX_PATH:
        return False
    for segment in run.split("/"):
        if len(segment) >= 3 and _PATH_SEGMENT.fullmatch(segment):
            for word in _LETTER_RUNS.findall(segment):
                if len(word) >= 3 and _VOWEL.search(word) and not _CONSONANTS4.search(word):
                    return True
    return False


@functools.lru_cache(maxsize=4096)
def random_letters(value: str) -> bool:
    """Letters at random (a generated password without a digit, one in 16 of 16 base62
    characters), not an identifier: 12 letters or more, the case changing at one letter
    in four or more (camelCase changes once a word), reading as no words."""
    letters = "".join(_ASCII_LETTERS.findall(value))
    if len(letters) < 12 or letters.isupper() or letters.islower():
        return False
    cases = letters.translate(_CASE_MAP)  # "U" for an upper-case letter, "l" for a lower
    changes = cases.count("Ul") + cases.count("lU")
    return changes * 4 >= len(letters) and wordiness(letters.lower()) <= 0.3


_ASCII_LETTERS = lazy(r"[A-Za-z]+", _F)
_CASE_MAP = str.maketrans(string.ascii_uppercase + string.ascii_lowercase, "U" * 26 + "l" * 26)


@functools.lru_cache(maxsize=4096)  # logs repeat their paths and ids
def looks_random(run: str) -> bool:
    """Does a run of token characters look like a random secret?"""
    core = run.rstrip("=")[:_SAMPLE]
    n = len(core)
    if n < _MIN_RUN or _HEX_RUN.fullmatch(core) or _SRI.match(core):
        return False  # hex hashes and UUIDs (the common case, checked first)
    if core.startswith("MII") and _der_certificate(core):
        return False  # a certificate in base64 DER: public
    if all(_PURE_PART.fullmatch(part) for part in _PART_SEP.split(core)):
        return False  # WORDS_AND_123, NODE_FUSE_<hex>
    if (core.count("_") + core.count("-")) * 10 >= n:
        return False  # snake_case or kebab-case words
    if (_UPPER.search(core) is None) + (_LOWER.search(core) is None) + (
        _DIGIT.search(core) is None
    ) > 1:
        return False  # a single character class
    low = core.lower()
    if "abcdefgh" in low or "01234567" in low:
        return False  # an alphabet listing: ABCDEFGH..., 0123456789...
    if not _entropy_at_least(core, _MIN_ENTROPY):
        return False
    return wordiness(low) <= _MAX_WORDINESS


def _entropy(s: str) -> float:
    """Shannon entropy in bits per character: log2(n) - sum(c * log2(c)) / n."""
    n = len(s)
    return math.log2(n) - sum(map(_C_LOG_C.__getitem__, Counter(s).values())) / n


def _entropy_at_least(s: str, bits: float) -> bool:
    """``_entropy(s) >= bits``, mostly without counting: of all strings of n characters
    with d distinct ones, the least random has one character n - d + 1 times and the
    others once, so when even that one reaches ``bits`` (as random tokens do), so does
    ``s``."""
    n = len(s)
    least = math.log2(n) - _C_LOG_C[n - len(set(s)) + 1] / n
    return least >= bits or _entropy(s) >= bits


# The common pairs as one pattern: a first letter, then (looking ahead) one of its
# second letters, so that findall counts overlapping pairs in one scan.
_SECOND: dict[str, str] = {}
for _pair in sorted(_COMMON_PAIRS):
    _SECOND[_pair[0]] = _SECOND.get(_pair[0], "") + _pair[1]
_COMMON_PAIR_SCAN = lazy("|".join(f"{a}(?=[{b}])" for a, b in _SECOND.items()), _F)


def wordiness(low: str) -> float:
    """The share of adjacent letter pairs (of lower-cased text) common in English."""
    runs = _LETTER_RUNS.findall(low)
    pairs = sum(map(len, runs)) - len(runs)
    if not pairs:
        return 0.0
    return len(_COMMON_PAIR_SCAN.findall(low)) / pairs

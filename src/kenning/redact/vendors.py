"""Keys with no format of their own, recognised by what names them nearby.

Many vendors' keys are plain hex or base62 of a fixed length (Datadog, Mailgun's older
keys, Braintree, Algolia, Twilio auth tokens, Ethereum private keys...).  Such a value
is a secret when the words just before it, on the same line, name it: a vendor
(``datadog``), or a secret word (``key``, ``token``, ``secret``, ``password``...), with
nothing between them that makes it an identifier instead (``id``, ``sha``, ``commit``,
``fingerprint``, ``public``...).  ``the Datadog API key is 3f9c...`` and ``DD_APP_KEY:
3f9c...`` are redacted; ``fixed in commit 3f9c...`` and ``the key id is 3f9c...`` are
not.  Hex and UUID values need a secret word; a random-looking mix of letters and digits
needs either.

Candidates are the long runs of token characters left between the other rules' spans,
found on a byte translation; only those that look like keys get their 80 characters
of context read, so the cost stays linear.
"""

from __future__ import annotations

import functools
import re
import string
from bisect import bisect_left
from collections.abc import Callable

from kenning.redact.entropy import TWILIO_SID, public_prefix, random_letters, wordiness
from kenning.redact.lazy import lazy

_F = re.ASCII
_Span = tuple[int, int, str]


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# vendor words -> kind
VENDORS: dict[str, str] = {}
for _kind, _words in (
    ("mailgun_key", "mailgun"),
    ("mailchimp_key", "mailchimp mandrill"),
    ("datadog_key", "datadog dd"),
    ("shopify_token", "shopify"),
    ("databricks_token", "databricks"),
    ("airtable_token", "airtable"),
    ("alibaba_key", "alibaba aliyun"),
    ("asana_token", "asana"),
    ("braintree_token", "braintree"),
    ("buildkite_token", "buildkite"),
    ("ethereum_key", "ethereum eth wallet metamask web3 infura alchemy mnemonic"),
    ("twilio_key", "twilio"),
    ("sendgrid_key", "sendgrid"),
    ("algolia_key", "algolia"),
    ("heroku_key", "heroku"),
    ("okta_token", "okta"),
    ("auth0_secret", "auth0"),
    ("cloudflare_key", "cloudflare"),
    ("pagerduty_key", "pagerduty opsgenie"),
    ("newrelic_key", "newrelic"),
    ("sentry_token", "sentry rollbar bugsnag"),
    ("observability_key", "honeycomb loggly splunk logdna mezmo papertrail lightstep"),
    ("sumologic_key", "sumologic sumo"),
    ("analytics_key", "mixpanel segment amplitude posthog heap"),
    ("support_key", "intercom zendesk freshdesk hubspot helpscout"),
    ("salesforce_token", "salesforce"),
    ("social_key", "twitch spotify discord telegram twitter facebook instagram linkedin reddit"),
    ("stripe_key", "stripe"),
    ("payment_key", "paypal square plaid adyen razorpay paystack mollie klarna checkout"),
    ("crypto_exchange_key", "coinbase binance kraken kucoin bittrex bitfinex gemini"),
    ("confluent_key", "confluent"),
    ("cms_key", "contentful sanity strapi storyblok prismic contentstack"),
    ("ci_token", "codecov travis circleci jenkins drone gitea bitbucket"),
    ("atlassian_token", "atlassian jira confluence trello"),
    ("notion_token", "notion"),
    ("linear_key", "linear"),
    ("figma_token", "figma"),
    ("dropbox_token", "dropbox"),
    ("mapbox_token", "mapbox"),
    ("messaging_key", "pusher ably vonage nexmo plivo messagebird sinch"),
    ("mail_key", "postmark mailjet sparkpost mailersend brevo sendinblue mailerlite"),
    ("ai_key", "cohere mistral together openrouter replicate huggingface groq deepseek"),
    ("ai_key", "elevenlabs assemblyai deepgram fireworks anyscale voyage jina perplexity"),
    ("vector_db_key", "pinecone weaviate qdrant"),
    ("wandb_key", "wandb"),
    ("azure_key", "azure"),
    ("google_key", "gcp firebase"),
    ("supabase_key", "supabase"),
    ("hosting_token", "vercel netlify render railway linode vultr hetzner scaleway ngrok"),
    ("database_key", "snowflake mongodb redis elastic elasticsearch typesense meilisearch"),
    ("shipping_key", "shippo easypost lob"),
    ("yandex_key", "yandex"),
    ("ibm_key", "ibm softlayer cloudant"),
    ("jfrog_token", "jfrog artifactory"),
    ("sonarqube_token", "sonar sonarqube sonarcloud"),
    ("snyk_token", "snyk"),
    ("launchdarkly_key", "launchdarkly optimizely statsig"),
    ("grafana_token", "grafana"),
    ("dynatrace_token", "dynatrace"),
    ("tailscale_key", "tailscale"),
    ("cloudinary_key", "cloudinary"),
    ("billing_key", "paddle chargebee recurly gumroad lemonsqueezy"),
    ("accounting_key", "quickbooks xero freshbooks"),
    ("clickup_token", "clickup monday"),
    ("zoom_key", "zoom"),
    ("shippo_token", "shippo"),
    ("plaid_token", "plaid"),
    ("lichess_token", "lichess"),
    ("lob_key", "lob"),
    ("maxmind_key", "maxmind geoip"),
    ("adobe_secret", "adobe"),
    ("adafruit_key", "adafruit"),
    ("clojars_token", "clojars"),
    ("midtrans_key", "midtrans"),
    ("posthog_key", "posthog"),
    ("cdn_key", "fastly akamai bunnycdn keycdn"),
    ("backblaze_key", "backblaze"),
    ("api_service_key", "rapidapi finnhub nytimes openweather weatherstack ipinfo ipstack"),
    ("chat_key", "sendbird gitter mattermost rocketchat"),
    ("commerce_key", "squarespace etsy bigcommerce gocardless"),
    ("media_key", "flickr vimeo"),  # (YouTube's keys are Google's AIza...; its ids are public)
    ("bi_key", "looker metabase tableau"),
):
    for _word in _words.split():
        VENDORS[_word] = _kind
KINDS = tuple(dict.fromkeys(VENDORS.values()))

# Vendors whose names are also plain words: they name a value only with a secret word.
_PLAIN_WORDS = _wordset(
    """
    render linear square segment heap checkout monday zoom drone elastic together voyage
    lob paddle sanity notion gemini wallet mnemonic azure google firebase redis atlas
    vault pusher ably box fly modal lambda slack discord telegram sumo plaid
    """
)
# Short vendor words must stand alone (DD_API_KEY, eth).
_SHORT = {w for w in VENDORS if len(w) <= 4}
# The naming words: a vendor, or a secret word.  They are found on a lower-cased byte
# copy of the text by one trie-shaped pattern (a pattern of ~300 alternatives, or a
# case-insensitive one, is tried branch by branch at every position: seconds for a
# megabyte of tokens).  A word ends where the letters end (short vendor words where the
# letters and digits end); whether it stands alone is checked after the match, except
# key/token/secret glued to a word in camelCase or snake_case (apiKey, clientSecret,
# DD_API_KEY).
_SECRET_NAMING = (
    "api key",
    "api_key",
    "api-key",
    "apikey",
    "key",
    "keys",
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "credential",
    "credentials",
    "creds",
    "auth",
    "signature",
    "sig",
    "private",
)


def _naming_trie() -> str:
    root: dict[str, dict] = {}  # type: ignore[type-arg]
    for word in (*VENDORS, *_SECRET_NAMING):
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {"short": word in _SHORT}

    def emit(node: dict[str, dict]) -> str:  # type: ignore[type-arg]
        # children first: the longest word that fits wins
        branches = [re.escape(c) + emit(child) for c, child in sorted(node.items()) if c]
        if "" in node:
            branches.append("(?![a-z0-9])" if node[""]["short"] else "(?![a-z])")
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return emit(root)


_NAMING = lazy(lambda: _naming_trie().encode())  # built at the first use
_LOWER_BYTES = bytes(range(256)).lower()
_GLUED_BYTES = frozenset((b"key", b"token", b"secret"))
_VENDOR_BYTES = {word.encode(): word for word in VENDORS}
# Words that make the value an identifier, a hash or something public.
_META = _wordset(
    """
    id ids sha sha1 sha256 sha512 md5 hash hashes digest commit commits checksum
    fingerprint thumbprint uuid guid version trace request span order invoice address
    public pub publishable gpg pgp ssh cert certificate salt nonce iv tx txn transaction
    block build run job task issue ticket pr pull merge revision rev tag release image
    container pod node cluster project org organization user username email name url uri
    link path file dir bucket region zone endpoint host domain port index table row
    record item doc document sheet spreadsheet folder drive page session client_id cache
    primary foreign sort partition lookup idempotency etag integrity object map
    correlation event message msg device serial sku product customer account_id app_id
    tenant subscription_id key_id keyid kid cid pid receipt payment charge refund
    transfer base workspace view rsa dsa ecdsa eddsa ed25519 cv25519 recv keyserver
    continuation pagination cursor sitekey site accessor
    """
)
_WORD = lazy(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", _F)
_MAX_GAP = 48  # characters between the naming word and the value
_WINDOW = 120  # how far back, on the same line, a naming word is looked for

_CANDIDATE_CHARS = string.ascii_letters + string.digits + "_+/=.~-"
_CANDIDATE_BYTES = bytes(ord("a") if chr(b) in _CANDIDATE_CHARS else ord(" ") for b in range(256))
MIN_VALUE = 16
_NEEDLE = b"a" * MIN_VALUE
_HEX = lazy(r"(?:0x)?[0-9a-fA-F]{32,128}", _F)
_SHORT_HEX = lazy(r"[0-9a-fA-F]{16,31}", _F)
# A UUID, bare or with the prefix of LaunchDarkly's keys (sdk-, mob-, api-)
_UUID = lazy(r"(?:sdk-|mob-|api-)?[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", _F)
_MIXED = lazy(r"[A-Za-z0-9_+/=.~-]{16,256}", _F)
_TRIM = "._-~=/+"
_DIGIT_RUNS = lazy(r"(?<=[^0-9])[0-9]+(?=[^0-9])", _F)  # digits between others
_SEPARATORS = lazy(r"[-_./+=~]", _F)
_LETTERS = lazy(r"[A-Za-z]+", _F)
_DIGIT_BYTES = string.digits.encode()
_LETTER_BYTES = string.ascii_letters.encode()
_ASSIGNED = lazy(r"[A-Za-z_][A-Za-z0-9_.-]*+", _F)
# A host and a path (docs.google.com/document/d/...): a URL, whose parts are judged by
# the rules for URLs, not a key
_URL_VALUE = lazy(r"[A-Za-z0-9-]++(?:\.[A-Za-z0-9-]++)++/", _F)
_ADDRESS = lazy(r"0x[0-9a-fA-F]{40}", _F)
_ULID = lazy(r"[0-9A-HJKMNP-TV-Z]{26}", _F)  # ULIDs and their look-alikes


# A naming word found: where it starts and ends, and the vendor's word (None for a
# secret word such as "key").
_Name = tuple[int, int, "str | None"]


class Finder:
    """The named-value rule over one text."""

    def __init__(self, text: str, raw: bytes, random: Callable[[str], bool]) -> None:
        self.text = text
        self.raw = raw
        self.mapped = raw.translate(_CANDIDATE_BYTES)
        self.random = random  # the entropy rule's test, for 16+ character mixes
        self._low = b""
        self._markers = "[redacted:" in text  # when redacting again
        self._names: list[_Name] = []
        self._starts: list[int] = []
        self._scanned = 0
        self._seen: dict[tuple[str, str], str | None] = {}
        self._cues: list[int] | None = None

    def names(self, lo: int, hi: int) -> list[_Name]:
        """The naming words in ``text[lo:hi]``.  Values are judged in order, so the text
        is read for names once, only up to the last value and only near values."""
        text = self.text
        if hi > self._scanned:
            if not self._low:
                self._low = self.raw.translate(_LOWER_BYTES)
            for m in _NAMING.finditer(self._low, max(self._scanned, lo), hi):
                at = m.start()
                vendor = _VENDOR_BYTES.get(m.group())
                alone = at == 0 or not text[at - 1].isalnum()
                if not alone and (vendor or m.group() not in _GLUED_BYTES):
                    continue
                marked = self._markers and _in_marker(text, at)
                if (alone or _glued_name(text, at)) and not marked:
                    self._names.append((at, m.end(), vendor))
                    self._starts.append(at)
            self._scanned = hi
        return self._names[bisect_left(self._starts, lo) : bisect_left(self._starts, hi)]

    def spans(self, lo: int, hi: int, out: list[_Span]) -> None:
        text, mapped = self.text, self.mapped
        start = mapped.find(_NEEDLE, lo, hi)
        while start >= 0:
            end = mapped.find(b" ", start, hi)
            if end < 0:
                end = hi
            s, e = start, end
            while s < e and text[s] in _TRIM:
                s += 1
            while e > s and text[e - 1] in _TRIM:
                e -= 1
            # name=value glued in one run (a form body's client_id=...): the value is what
            # follows the =, and the name is one of the words before it
            eq = text.find("=", s, e)
            if eq > s and eq + 1 < e and text[eq + 1] != "=" and _ASSIGNED.fullmatch(text, s, eq):
                s = eq + 1
                while e < end and text[e] == "=":
                    e += 1  # the value's base64 padding (AccountKey=...==)
            if e - s >= MIN_VALUE:
                # Most values have no naming word before them: that is cheaper to see
                # than their shape.
                window = self._window(s, lo)
                names = self.names(window, s)
                kind = None
                if names and names[0][1] <= s:
                    shape = _shape(text[s:e], self.random)
                    if shape is not None:
                        kind = self._remembered(window, s, shape, names)
                if kind is None and self._cued(s):
                    kind = self._complained(s, e)
                if kind == "ethereum_key" and _ADDRESS.fullmatch(text, s, e):
                    kind = None  # an address (0x and 40 hex) is public; a key is 64 hex
                if kind is not None and _under_meta_column(text, s):
                    kind = None  # fly secrets list: NAME, DIGEST, CREATED AT
                if kind is not None:
                    out.append((s, e, kind))
            start = mapped.find(_NEEDLE, end, hi)

    def _cued(self, start: int) -> bool:
        """Is a word of complaint about a key (``rejecting``, ``401``, ``dashboard``...)
        on the line of ``start`` or the next?  Found once over the whole text."""
        if self._cues is None:
            if not self._low:
                self._low = self.raw.translate(_LOWER_BYTES)
            self._cues = [m.start() for m in _CUE.finditer(self._low)]
        cues = self._cues
        near = bisect_left(cues, start - _WINDOW)
        if near == len(cues) or cues[near] > start + 2 * _WINDOW:
            return False  # most values: no cue anywhere near, seen without reading the text
        lo, hi = _around(self.text, start, start, 2)
        at = bisect_left(self._cues, lo)
        return at < len(self._cues) and self._cues[at] < hi

    def _complained(self, start: int, end: int) -> str | None:
        """The vendor's kind of a key-shaped value that no word before it names, said in
        a line that names the vendor and complains about a key: "why does Twilio keep
        rejecting 3f9c...", "tried 3f9c... with Deepgram, 401", a key alone on its line
        with "^ that's the one from the Snyk dashboard" below it.  Nothing on those lines
        may make it an identifier or a commit (``id``, ``event``, ``deployed``...), and a
        vendor whose name is a plain word ("plaid", "square") does not count."""
        text = self.text
        shape = _shape(text[start:end], self.random)
        if shape is None:
            return None
        lo, line_end = _around(text, start, end, 1)
        alone = not text[end:line_end].strip()
        hi = _around(text, start, end, 2)[1] if alone else line_end
        if any(w.lower() in _META or w.lower() in _SHIPPED for w in _WORD.findall(text, lo, hi)):
            return None
        if _CUE.search(self._low, lo, hi) is None:
            return None
        for m in _NAMING.finditer(self._low, lo, hi):
            vendor = _VENDOR_BYTES.get(m.group())
            at = m.start()
            if vendor and vendor not in _PLAIN_WORDS and (at == 0 or not text[at - 1].isalnum()):
                if _in_marker(text, at):
                    continue  # redacting again: a marker's kind names no vendor here
                return VENDORS[vendor]
        return None

    def _window(self, start: int, gap: int) -> int:
        """Where the words that may name a value at ``start`` begin: on its line, at most
        _WINDOW characters back, within its gap (a word before another secret, or
        before a marker when redacting again, names that one, not this)."""
        text = self.text
        line_start = text.rfind("\n", max(0, start - _WINDOW), start) + 1
        lo = max(line_start, start - _WINDOW, gap)
        marker = text.rfind("[redacted:", lo, start)
        if marker >= 0:
            close = text.find("]", marker, start)
            lo = close + 1 if close >= 0 else start
        return lo

    def named(self, start: int, shape: str, gap: int = 0) -> str | None:
        """The kind of a key-shaped value at ``start`` when the words before it name it
        (remembered by the words before it: a repeated line is judged once)."""
        lo = self._window(start, gap)
        return self._remembered(lo, start, shape, self.names(lo, start))

    def _remembered(self, lo: int, start: int, shape: str, names: list[_Name]) -> str | None:
        key = (self.text[max(0, lo - 1) : start], shape)
        kind = self._seen.get(key, "")
        if kind == "":
            if len(self._seen) > 4096:
                self._seen.clear()
            kind = self._seen[key] = self._named(lo, start, shape, names)
        return kind

    def _named(self, lo: int, start: int, shape: str, names: list[_Name]) -> str | None:
        text = self.text
        found = [n for n in names if n[1] <= start]
        if not found:
            return None
        last_start, last_end, _ = found[-1]
        between = text[last_end:start]
        if _jsx_key(text, lo, last_start, last_end):
            return None
        if len(between) > _MAX_GAP:
            return None
        if between in ("\\", "\\\\"):
            return None  # a Windows path's next component (...\Credentials\<hex>): a file
        if any(w.lower() in _META for w in _WORD.findall(between)):
            return None
        before = _WORD.findall(text[max(lo, last_start - 24) : last_start])
        if before and before[-1].lower() in _META:
            return None
        if [w.lower() for w in before[-2:]] == ["public", "key"]:
            return None  # .NET's publicKeyToken: a hash of an assembly's public key
        vendors = [v for _, _, v in found if v]
        vendor = VENDORS[vendors[0]] if vendors else None
        secret_word = len(vendors) < len(found)

        # an Ethereum private key is 0x and 64 hex digits: a wallet names it enough
        wallet = vendor == "ethereum_key" and text.startswith("0x", start)
        if shape in ("hex", "uuid") and not secret_word and not wallet:
            return None
        if not secret_word and not wallet and all(v in _PLAIN_WORDS for v in vendors):
            return None  # "render", "linear", "square" alone are words, not vendors
        return vendor or "secret_assignment"


_TABLE_BACK = 60  # lines up to a listing's header
_HEADER_CELL = r"[A-Za-z0-9_()/#.-]++(?: [A-Za-z0-9_()/#.-]++)*+"
_HEADER_LINE = lazy(rf"(?=[A-Za-z]){_HEADER_CELL}(?:(?: *\t[ \t]*| {{2,}}){_HEADER_CELL})+", _F)
_HEADER_WORD = lazy(r"[A-Za-z][A-Za-z0-9]*+", _F)


def _under_meta_column(text: str, start: int) -> bool:
    """Is the value at ``start`` in a listing's column whose header names an identifier
    or a digest (``DIGEST``, ``ID``, ``SHA``...)? The header is a line above it in the
    same block of lines (no blank line between), its columns apart by two spaces or a
    tab, with that word starting where the value does."""
    line = text.rfind("\n", 0, start) + 1
    column = start - line
    if column == 0 or text[start - 1] not in " \t":
        return False
    top = line
    for _ in range(_TABLE_BACK):
        if top == 0:
            return False
        above = text.rfind("\n", 0, top - 1) + 1
        header = text[above : top - 1].rstrip()
        if not header:
            return False
        top = above
        if column >= len(header) or header[column - 1] not in " \t":
            continue
        word = _HEADER_WORD.match(header, column)
        if (
            word is not None
            and word.group().lower() in _META
            and _HEADER_LINE.fullmatch(header) is not None
        ):
            return True
    return False


# A tag's key attribute: React's <li key="..."> and Vue's :key name a list item, not a secret.
_TAG_OPEN = lazy(r"<[A-Za-z][\w.:-]*+(?:[ \t][^<>\r\n]*+)?+\Z", _F)


def _jsx_key(text: str, lo: int, word_start: int, word_end: int) -> bool:
    if text[word_start:word_end] != "key" or not text.startswith("=", word_end):
        return False
    if word_start == 0 or text[word_start - 1] not in " \t:":
        return False
    return _TAG_OPEN.search(text, lo, word_start) is not None


# Words said of a commit (and of CI), whose hash the lines of a complaint may hold too.
_SHIPPED = _wordset(
    "deploy deployed deploying push pushed merged revert reverted rebased bisect ci pipeline"
    " workflow"
)
# Words said of a key that does not work, or of where one was copied from.
_CUE = lazy(
    rb"reject|(?<![0-9])40[13](?![0-9])|unauthori[sz]ed|forbidden|dashboard|console|pasted"
    rb"|copied|revoked|expired|invalid|leaked|rotate|creds"
)


def _around(text: str, start: int, end: int, lines: int) -> tuple[int, int]:
    """The line of a value at ``start:end`` (with ``lines`` 2, and the line after it),
    at most _WINDOW characters each side of it."""
    lo = max(0, start - _WINDOW)
    lo = max(lo, text.rfind("\n", lo, start) + 1)
    hi = min(len(text), end + _WINDOW)
    stop = text.find("\n", end, hi)
    if stop >= 0 and lines > 1:
        stop = text.find("\n", stop + 1, hi)
    return lo, hi if stop < 0 else stop


@functools.lru_cache(maxsize=4096)
def _shape(value: str, random: Callable[[str], bool]) -> str | None:
    if public_prefix(value) or value.endswith(("EXAMPLE", "EXAMPLEKEY")):
        return None  # (AWS's documentation keys: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY)
    if _HEX.fullmatch(value) or _SHORT_HEX.fullmatch(value):
        return "hex"  # (16 to 31 hex digits: a digest's or an id's prefix as often as a key)
    if _UUID.fullmatch(value):
        return "uuid"
    if not _MIXED.fullmatch(value) or _ULID.fullmatch(value) or TWILIO_SID.fullmatch(value):
        return None  # (a Twilio SID names a message, a call, an account: an id)
    if "/" in value and _URL_VALUE.match(value):
        return None
    raw = value.encode("ascii", "replace")
    digits = len(raw) - len(raw.translate(None, _DIGIT_BYTES))
    letters = len(raw) - len(raw.translate(None, _LETTER_BYTES))
    if (digits < 2 and not random_letters(value)) or letters < 4:
        return None
    if "." in value and not any(c in value for c in "+/=_"):
        return None  # 1.2.3-beta.4, example.com
    parts = [p for p in _SEPARATORS.split(value) if p]
    if len(parts) > 1 and all(len(p) <= 12 for p in parts):
        return None  # user-service-v2, build_2024_11_29
    if len(parts) >= 4 and _HEX.fullmatch(parts[-1]) and all(len(p) <= 12 for p in parts[:-1]):
        return None  # words and a digest: a CI cache's key, node-cache-Linux-x64-npm-<sha256>
    if (
        len(parts) >= 3
        and len(parts[-1]) in (40, 64, 128)
        and _HEX.fullmatch(parts[-1])
        and all(p.isalpha() and len(p) <= 12 for p in parts[:-1])
    ):
        return None  # two words or more and a SHA-1/256/512: node-modules-<sha256>
    return "mixed" if len(value) >= 32 and random(value) or _looks_random(value) else None


def _looks_random(value: str) -> bool:
    """16-31 characters: both cases or digits all through, not a word with a number."""
    runs = _LETTERS.findall(value)
    if not runs or len(value) < 16:
        return False
    longest = max(runs, key=len)
    if len(longest) > 12 and not random_letters(longest):
        return False  # a word and a number: getUser2ByIdFast
    if len(_DIGIT_RUNS.findall(value)) >= 2:
        return True
    # one run of digits: random only if both cases mix without reading as words
    # (keypQbHIAd86Nhviq, not getUser2ByIdFast)
    return not value.isupper() and not value.islower() and wordiness(value.lower()) <= 0.3


def _glued_name(text: str, at: int) -> bool:
    """``key``/``token``/``secret`` glued to a word before it counts in camelCase
    (apiKey, clientSecret) and snake_case, not inside a plain word (monkey)."""
    return at > 0 and (text[at].isupper() or text[at - 1] in "_-")


def _in_marker(text: str, at: int) -> bool:
    """Is ``at`` inside a ``[redacted:kind]`` marker (whose kind may read as a name)?"""
    lo = max(0, at - 40)
    return text.rfind("[redacted:", lo, at) > text.rfind("]", lo, at)


# Sumo Logic access ids: "su" and 12 letters and digits, too short for the rule above;
# a secret when "sumo" is written before them on the same line.
_SUMO_ID = lazy(r"(?<![A-Za-z0-9])su[A-Za-z0-9]{12}(?![A-Za-z0-9])", _F)
_SUMO = lazy(r"sumo", _F | re.IGNORECASE)


def short_ids(text: str, add: Callable[[_Span], None]) -> None:
    """Vendor ids too short for the named-value rule that their vendor makes secret."""
    if "sumo" not in text and "Sumo" not in text and "SUMO" not in text:
        return
    for m in _SUMO_ID.finditer(text):
        start = m.start()
        line_start = text.rfind("\n", max(0, start - _WINDOW), start) + 1
        if _SUMO.search(text, max(line_start, start - _WINDOW), start) is None:
            continue
        body = m.group()[2:]
        digits = any(c.isdigit() for c in body)
        upper = sum(c.isupper() for c in body)
        if digits or (upper >= 2 and not body.isupper()):
            add((start, m.end(), "sumologic_key"))

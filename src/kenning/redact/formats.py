"""Token formats: secrets recognised by their shape alone.

Most formats start with a fixed prefix (``ghp_``, ``glpat-``, ``GOCSPX-``, ``dapi``...).
Rather than one scan of the text per format, which costs a pass over the whole text
for each of ~150 prefixes, the prefixes go into trie-shaped regular expressions, and
those only run over the *long runs* of token characters: a token is at least 15
characters of ``[A-Za-z0-9_.+/=$!%~:-]``, so a substring search on a byte translation of
the text (as for the entropy rule) finds the few places where one can be.  A prefix is
accepted only at the start of a word (``task-...`` is not ``sk-...``).  Formats whose
bodies are short (up to 320 characters) are joined to their prefixes in one pattern,
so the regex engine alone rejects what does not fit; the few whose bodies may run on
(JWTs, ``sk-`` keys...) are matched from Python, longest prefix first (``sk-ant-``
before ``sk-``), skipping prefixes inside a token already found or inside a body
already refused, so that a run of repeated prefixes stays linear.  A handful of
formats have their fixed part in the middle (``<32 hex>-us6`` for Mailchimp,
``<4 chars>Q~`` for Azure AD secrets, ``<digits>:AA`` for Telegram bots); their
patterns start with that fixed part and look behind it.

The formats are facts about public token formats (as published by the vendors and as
the well-known secret scanners list them); the patterns are written for kenning and are
deliberately a little lenient on lengths, since a near-miss of a real format is a
secret all the same.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterator
from typing import NamedTuple

from kenning.redact.lazy import lazy

_F = re.ASCII
_Span = tuple[int, int, str]

# (kind, prefixes, body).  The body follows the prefix directly; bodies of exact length
# end with a check that no further token character follows.
_END = r"(?![A-Za-z0-9_-])"
_HEX32 = r"[0-9a-fA-F]{32}" + _END
_HEX40 = r"[0-9a-fA-F]{40}" + _END
_HEX64 = r"[0-9a-fA-F]{64}" + _END
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}" + _END

FORMATS: tuple[tuple[str, str, str], ...] = (
    ("anthropic_key", "sk-ant-", r"[A-Za-z0-9_-]{20,4096}+"),
    ("openai_key", "sk-", r"(?!ant-)[A-Za-z0-9_-]{20,4096}+"),
    ("aws_access_key_id", "AKIA ASIA ABIA ACCA", r"[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ("slack_token", "xoxa- xoxb- xoxe- xoxo- xoxp- xoxr- xoxs-", r"[A-Za-z0-9-]{10,4096}+"),
    ("slack_token", "xapp-", r"[0-9]-[A-Za-z0-9-]{10,4096}+"),
    ("jwt", "eyJ", r"[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+"),
    # source hosting and CI
    ("github_token", "ghp_ gho_ ghu_ ghs_ ghr_", r"[A-Za-z0-9]{30,255}+"),
    ("github_token", "github_pat_", r"[A-Za-z0-9_]{50,255}+"),
    (
        "gitlab_token",
        "glpat- gldt- glrt- glft- glsoat- glimt- glcbt- glffct- gloas- glptt- glagent- glwt- "
        "gltst-",
        r"[A-Za-z0-9_.-]{18,300}+",
    ),
    ("gitlab_token", "GR1348941", r"[A-Za-z0-9_-]{18,64}+"),
    ("gitlab_token", "_gitlab_session=", r"[0-9a-f]{32}" + _END),
    ("bitbucket_token", "ATBB", r"[A-Za-z0-9_=.-]{28,4096}+"),
    ("atlassian_token", "ATATT", r"[A-Za-z0-9_=-]{100,4096}+"),
    ("buildkite_token", "bkua_ bkagent_", r"[A-Za-z0-9]{36,64}+"),
    ("circleci_token", "CCIPAT_ CCIPRJ_", r"[A-Za-z0-9_]{40,4096}+"),
    ("sonarqube_token", "squ_ sqp_ sqa_", _HEX40),
    ("jfrog_token", "AKCp", r"[A-Za-z0-9]{60,80}+"),
    ("jfrog_token", "cmVmdGtu", r"[A-Za-z0-9]{50,70}+"),
    ("sourcegraph_token", "sgp_", r"(?:[0-9a-f]{16}_|local_)?[0-9a-f]{40}" + _END),
    ("octopus_key", "API-", r"[A-Z0-9]{25,32}" + _END),
    ("harness_token", "pat. sat.", r"[A-Za-z0-9_-]{20,24}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    # AI providers
    ("huggingface_token", "hf_ api_org_", r"[A-Za-z0-9]{30,40}" + _END),
    ("groq_key", "gsk_", r"[A-Za-z0-9]{48,56}" + _END),
    ("xai_key", "xai-", r"[A-Za-z0-9]{60,90}" + _END),
    ("perplexity_key", "pplx-", r"[A-Za-z0-9]{40,56}" + _END),
    ("replicate_token", "r8_", r"[A-Za-z0-9]{36,40}" + _END),
    ("langsmith_key", "lsv2_pt_ lsv2_sk_", r"[0-9a-f]{32}_[0-9a-f]{10}" + _END),
    ("pinecone_key", "pcsk_", r"[A-Za-z0-9_]{40,4096}+"),
    ("elevenlabs_key", "sk_", r"[0-9a-f]{48}" + _END),
    # cloud
    ("google_api_key", "AIza", r"[A-Za-z0-9_-]{35}" + _END),
    ("google_oauth_secret", "GOCSPX-", r"[A-Za-z0-9_-]{24,40}+"),
    ("google_oauth_token", "ya29.", r"[A-Za-z0-9_-]{30,4096}+"),
    ("google_oauth_token", "1//", r"[A-Za-z0-9_-]{40,4096}+"),
    ("firebase_key", "AAAA", r"[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,4096}+"),
    ("aws_bedrock_key", "ABSK", r"[A-Za-z0-9+/]{100,300}+={0,2}"),
    ("alibaba_key", "LTAI", r"[A-Za-z0-9]{12,24}" + _END),
    ("yandex_key", "AQVN", r"[A-Za-z0-9_-]{35,38}" + _END),
    ("digitalocean_token", "dop_v1_ doo_v1_ dor_v1_", _HEX64),
    ("heroku_key", "HRKU-", r"[A-Za-z0-9_-]{50,70}+"),
    ("flyio_token", "fo1_", r"[A-Za-z0-9_-]{40,48}+"),
    ("flyio_token", "fm1r_ fm1a_ fm2_", r"[A-Za-z0-9+/=_-]{60,4096}+"),
    ("vault_token", "hvs. hvb. hvr.", r"[A-Za-z0-9_-]{24,4096}+"),
    ("pulumi_token", "pul-", _HEX40),
    # a service token may name its config first: dp.st.prd.<40>, dp.st.dev_ci.<44>
    (
        "doppler_token",
        "dp.pt. dp.st. dp.ct. dp.sa. dp.scim. dp.audit.",
        r"(?:[a-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,48}+",
    ),
    ("supabase_key", "sbp_", r"[0-9a-f]{40}" + _END),
    ("supabase_key", "sb_secret_", r"[A-Za-z0-9_-]{20,4096}+"),
    ("netlify_token", "nfp_", r"[A-Za-z0-9]{36,40}" + _END),
    ("render_key", "rnd_", r"[A-Za-z0-9]{28,40}" + _END),
    ("deno_token", "ddp_ ddw_", r"[A-Za-z0-9]{36}" + _END),
    ("planetscale_token", "pscale_tkn_ pscale_oauth_ pscale_pw_", r"[A-Za-z0-9_.=-]{32,64}+"),
    ("cloudflare_key", "v1.0-", r"[0-9a-f]{24}-[0-9a-f]{140,160}+"),
    ("tailscale_key", "tskey-", r"[a-z]{3,8}-[A-Za-z0-9]{6,64}-[A-Za-z0-9]{16,4096}+"),
    ("dynatrace_token", "dt0c01. dt0s01. dt0s16.", r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}" + _END),
    ("newrelic_key", "NRAK- NRII- NRJS- NRRA- NRAA- NRIQ-", r"[A-Za-z0-9]{19,40}" + _END),
    ("grafana_token", "glc_", r"[A-Za-z0-9+/]{32,400}+={0,2}"),
    ("grafana_token", "glsa_", r"[A-Za-z0-9]{32}_[0-9a-fA-F]{8}" + _END),
    ("grafana_token", "eyJrIjoi", r"[A-Za-z0-9]{50,400}+={0,2}"),
    ("sentry_token", "sntrys_", r"[A-Za-z0-9+/=_-]{60,4096}+"),  # base64 JSON _ url-safe secret
    ("sentry_token", "sntryu_ sntrya_", _HEX64),
    ("openshift_token", "sha256~", r"[A-Za-z0-9_-]{43}" + _END),
    ("onepassword_token", "ops_eyJ", r"[A-Za-z0-9+/=_-]{100,4096}+"),
    ("onepassword_key", "A3-", r"[A-Z0-9]{6}(?:-[A-Z0-9]{5,6}){4,5}" + _END),
    ("age_secret_key", "AGE-SECRET-KEY-1", r"[0-9A-Z]{58}" + _END),
    # payments and commerce
    (
        "stripe_key",
        "sk_live_ sk_test_ sk_prod_ rk_live_ rk_test_ rk_prod_",
        r"[A-Za-z0-9]{16,255}+",
    ),
    ("stripe_key", "whsec_", r"[A-Za-z0-9+/=]{24,4096}+"),
    ("square_token", "sq0atp- sq0csp-", r"[A-Za-z0-9_-]{22,4096}+"),
    ("square_token", "EAAA", r"[A-Za-z0-9_-]{56,64}" + _END),
    (
        "braintree_token",
        "access_token$production$ access_token$sandbox$",
        r"[0-9a-z]{16}\$[0-9a-f]{32}",
    ),
    ("shopify_token", "shpat_ shpca_ shppa_ shpss_ shpua_ shprt_", _HEX32),
    ("woocommerce_key", "ck_ cs_", _HEX40),
    ("flutterwave_key", "FLWSECK_TEST- FLWSECK-", r"[0-9a-fA-F]{32}-X"),
    ("duffel_token", "duffel_test_ duffel_live_", r"[A-Za-z0-9_=-]{40,48}+"),
    ("easypost_key", "EZAK EZTK", r"[A-Za-z0-9]{54}" + _END),
    ("salesforce_token", "00D", r"[A-Za-z0-9]{12,15}![A-Za-z0-9._]{60,4096}+"),
    ("hubspot_token", "pat-na1- pat-eu1- pat-na2- pat-ap1-", _UUID),
    ("clickup_token", "pk_", r"[0-9]{5,12}_[A-Z0-9]{32}" + _END),
    # messaging and mail
    ("sendgrid_key", "SG.", r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,50}+"),
    ("mailgun_key", "key-", _HEX32),
    ("brevo_key", "xkeysib- xsmtpsib-", r"[0-9a-f]{64}-[A-Za-z0-9]{16}" + _END),
    ("twilio_key", "SK", _HEX32),
    ("resend_key", "re_", r"[A-Za-z0-9]{6,12}_[A-Za-z0-9]{16,40}" + _END),
    ("slack_token", "xoxe.xox", r"[bp]-[0-9]-[A-Za-z0-9]{100,4096}+"),
    ("intercom_token", "dG9rO", r"[A-Za-z0-9+/=_-]{40,4096}+"),
    ("twitter_token", "AAAAAAAAAAAAAAAAAAAAA", r"[A-Za-z0-9%]{50,4096}+"),
    ("facebook_token", "EAAB EAAC EAAG EAAI EAAJ EAAU", r"[A-Za-z0-9]{80,4096}+"),
    # everything else
    ("databricks_token", "dapi dose", r"[0-9a-f]{32}(?:-[0-9])?" + _END),
    ("airtable_token", "pat", r"[A-Za-z0-9]{14}\.[0-9a-f]{64}" + _END),
    ("asana_token", "1/ 2/", r"[0-9]{10,20}(?:/[0-9]{10,20})?:[0-9A-Za-z]{32}" + _END),
    ("npm_token", "npm_", r"[A-Za-z0-9]{36}" + _END),
    ("pypi_token", "pypi-AgE", r"[A-Za-z0-9_-]{50,4096}+"),
    ("rubygems_key", "rubygems_", r"[0-9a-f]{48}" + _END),
    ("cratesio_token", "cio", r"[A-Za-z0-9]{32}" + _END),
    ("nuget_key", "oy2", r"[a-z0-9]{43}" + _END),
    ("docker_token", "dckr_pat_ dckr_oat_", r"[A-Za-z0-9_-]{24,4096}+"),
    ("postman_key", "PMAK-", r"[0-9a-f]{24}-[0-9a-f]{34}" + _END),
    ("linear_key", "lin_api_", r"[A-Za-z0-9]{40}" + _END),
    ("linear_key", "lin_oauth_", _HEX64),
    ("notion_token", "ntn_", r"[A-Za-z0-9]{40,50}" + _END),
    ("notion_token", "secret_", r"[A-Za-z0-9]{43}" + _END),
    ("figma_token", "figd_", r"[A-Za-z0-9_-]{36,4096}+"),
    ("trello_token", "ATTA", r"[A-Za-z0-9]{60,4096}+"),
    ("contentful_token", "CFPAT-", r"[A-Za-z0-9_-]{43}" + _END),
    ("typeform_token", "tfp_", r"[A-Za-z0-9_=.-]{40,70}+"),
    ("mapbox_token", "sk.eyJ", r"[A-Za-z0-9_-]{40,}\.[A-Za-z0-9_-]{16,4096}+"),
    ("dropbox_token", "sl.", r"[A-Za-z0-9_.-]{120,4096}+"),
    ("frameio_token", "fio-u-", r"[A-Za-z0-9_=-]{64}" + _END),
    ("readme_key", "rdme_", r"[a-z0-9]{70}" + _END),
    ("scalingo_token", "tk-us-", r"[A-Za-z0-9_-]{48}" + _END),
    ("prefect_key", "pnu_ pnb_", r"[A-Za-z0-9]{36}" + _END),
    ("infracost_key", "ico-", r"[A-Za-z0-9]{32}" + _END),
    ("clickhouse_key", "4b1d", r"[A-Za-z0-9]{38}" + _END),
    # added for issue 10, from the public lists of token formats
    ("shippo_token", "shippo_live_ shippo_test_", _HEX40),
    ("plaid_token", "access-sandbox- access-development- access-production-", _UUID),
    ("lob_key", "live_ test_", r"[0-9a-f]{35}" + _END),
    ("clojars_token", "CLOJARS_", r"[A-Za-z0-9]{60}" + _END),
    ("adobe_secret", "p8e-", r"[A-Za-z0-9]{32}" + _END),
    ("adafruit_key", "aio_", r"[A-Za-z0-9]{28}" + _END),
    ("intra42_secret", "s-s4t2ud- s-s4t2af-", _HEX64),
    ("defined_networking_key", "dnkey-", r"[A-Za-z0-9=_-]{26}-[A-Za-z0-9=_-]{52}" + _END),
    ("settlemint_token", "sm_pat_ sm_aat_ sm_sat_", r"[A-Za-z0-9]{16}" + _END),
    ("lichess_token", "lip_", r"[A-Za-z0-9]{20}" + _END),
    ("midtrans_key", "Mid-server- SB-Mid-server- VT-server-", r"[A-Za-z0-9_-]{20,4096}+"),
    ("flutterwave_key", "FLWSECK_TEST", r"[0-9a-fA-F]{12}" + _END),
    ("aws_access_key_id", "A3T", r"[A-Z0-9][A-Z2-7]{16}(?![A-Za-z0-9])"),
    ("vault_token", "s.", r"[A-Za-z0-9]{24}" + _END),
    ("yandex_key", "YC", r"[A-Za-z0-9_-]{38}" + _END),
    ("yandex_key", "t1.", r"[A-Za-z0-9_-]{8,200}+={0,2}\.[A-Za-z0-9_-]{86}={0,2}"),
    ("posthog_key", "phx_", r"[A-Za-z0-9_]{40,50}" + _END),
    ("langsmith_key", "ls__", r"[0-9a-f]{32}" + _END),
    ("neon_key", "napi_", r"[a-z0-9]{60,72}" + _END),
    ("zuplo_key", "zpka_", r"[A-Za-z0-9_]{32,80}" + _END),
    ("openvsx_token", "ovsxat_", r"[A-Za-z0-9-]{36}" + _END),
    # Bitwarden Secrets Manager access tokens: 0.<uuid>.<secret>:<base64 key>
    (
        "bitwarden_token",
        "0.",
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[A-Za-z0-9]{20,40}"
        r":[A-Za-z0-9+/]{20,24}={0,2}(?![A-Za-z0-9+/=])",
    ),
)

# Azure keys that carry a signature at a fixed offset: (signature, offset, the alphabet
# before it, what follows it).  Storage, Cosmos DB, API Management, Functions, Search,
# Cache for Redis, Service Bus, Event Hubs, Relay.
_B64 = "[A-Za-z0-9+/]"
_AZURE_SIGNED = (
    ("+ASt", 76, _B64, _B64 + "{5}[AQgw]=="),
    ("ACDb", 76, _B64, _B64 + "{5}[AQgw]=="),
    ("APIM", 76, _B64, _B64 + "{5}[AQgw]=="),
    ("AzFu", 44, "[A-Za-z0-9_-]", "[A-Za-z0-9_-]{5}[AQgw]=="),
    ("AzSe", 42, "[A-Za-z0-9]", "[A-Za-z0-9]{6}"),
    ("AzCa", 33, "[A-Za-z0-9]", "[A-P][A-Za-z0-9]{5}="),
    ("+ASb", 33, _B64, _B64 + "{5}="),
    ("+AEh", 33, _B64, _B64 + "{5}="),
    ("+ARm", 33, _B64, _B64 + "{5}="),
)

# Formats with no fixed prefix, or with their fixed part in the middle.  Those with a
# fixed part start at it (so that the engine skips ahead to it) and look behind it;
# ``back`` says how far before the match the secret starts.
OTHER: tuple[tuple[str, int, re.Pattern[str]], ...] = (
    # <32 hex>-us<N>
    (
        "mailchimp_key",
        32,
        lazy(r"-us(?<=(?<![A-Za-z0-9])[0-9a-f]{32}-us)[0-9]{1,2}(?![A-Za-z0-9])", _F),
    ),
    # three characters and a digit, Q~, then 31-34 more
    (
        "azure_ad_secret",
        4,
        lazy(r"Q~(?<=(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~)[A-Za-z0-9_~.-]{30,36}+", _F),
    ),
    # 14 characters, .atlasv1., then 60-70 more
    (
        "terraform_token",
        14,
        lazy(r"\.atlasv1\.(?<=[A-Za-z0-9]{14}\.atlasv1\.)[A-Za-z0-9_=-]{50,80}+", _F),
    ),
    # Azure DevOps personal access tokens of the 84-character kind: AZDO at 76
    (
        "azure_devops_token",
        76,
        lazy(r"AZDO(?<=(?<![A-Za-z0-9])[A-Za-z0-9]{76}AZDO)[A-Za-z0-9]{4}(?![A-Za-z0-9])", _F),
    ),
    # Azure container registry passwords: +ACR at 42
    (
        "azure_registry_key",
        42,
        lazy(
            r"\+ACR(?<=(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{42}\+ACR)[A-Za-z0-9]{6}(?![A-Za-z0-9])",
            _F,
        ),
    ),
    # MaxMind license keys: <6>_<29>_mmk
    (
        "maxmind_key",
        36,
        lazy(r"_mmk(?<=(?<![A-Za-z0-9_])[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)(?![A-Za-z0-9_])", _F),
    ),
    # Azure's identifiable keys: base64 with a fixed signature at a fixed place
    *(
        (
            "azure_key",
            back,
            lazy(
                re.escape(sig)
                + rf"(?<=(?<![A-Za-z0-9+/_-]){chars}{{{back}}}{re.escape(sig)})"
                + tail
                + r"(?![A-Za-z0-9+/=_-])",
                _F,
            ),
        )
        for sig, back, chars, tail in _AZURE_SIGNED
    ),
    # Fly.io's tokens as flyctl prints them: "FlyV1 " and comma-separated macaroons
    (
        "flyio_token",
        0,
        lazy(
            r"FlyV1 fm[12][ar]?_[A-Za-z0-9+/=_-]{20,4096}+"
            r"(?:,fm[12][ar]?_[A-Za-z0-9+/=_-]{20,4096}+)*+",
            _F,
        ),
    ),
    # Telegram bots: <bot id>:AA<33 characters>; the id's first digits are found by
    # looking back (see find_formats)
    (
        "telegram_token",
        8,
        lazy(r":AA(?<=[0-9]{8}:AA)[A-Za-z0-9_-]{32,34}(?![A-Za-z0-9_-])", _F),
    ),
)
_OTHER_FIXED = (
    "-us",
    "Q~",
    ".atlasv1.",
    "AZDO",
    "+ACR",
    "_mmk",
    *(sig for sig, _, _, _ in _AZURE_SIGNED),
    "FlyV1 ",
    ":AA",
)
# Discord bots: a base64 user id, a time stamp and an HMAC (no fixed part: tried only
# in runs that hold a dot)
_DISCORD = lazy(
    r"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}+", _F
)


# Webhook URLs whose path is the secret.
_WEBHOOKS = lazy(
    r"(?P<host>hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|discord(?:app)?\.com/api/webhooks/[0-9]{5,25}/"
    r"|\.webhook\.office\.com/webhookb2/"
    r"|hooks\.zapier\.com/hooks/catch/[0-9]{3,12}/"
    r"|outlook\.office(?:365)?\.com/webhook/)"
    # (a Zapier catch hook's key is 6 characters; a slash after the key is no part of it)
    r"(?P<s>[A-Za-z0-9@/_-]{4,}[A-Za-z0-9@_-])",
    _F,
)
_WEBHOOK_KIND = {
    "hooks.slack.com": "slack_token",
    "discord": "discord_webhook",
    "hooks.zapier.com": "zapier_webhook",
}
WEBHOOK_KINDS = ("slack_token", "discord_webhook", "zapier_webhook", "teams_webhook")

# --- the prefix trie ---------------------------------------------------------------------


def _trie(words: list[str]) -> str:
    """A regular expression matching any of ``words``, shaped as a trie so that the
    engine tries a handful of branches at each position rather than all of them; the
    longest word wins."""
    root: dict[str, dict] = {}  # type: ignore[type-arg]
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:  # type: ignore[type-arg]
        branches = [re.escape(c) + emit(child) for c, child in sorted(node.items()) if c]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            return f"(?:{body})?"
        return body

    return emit(root)


_Rule = tuple[str, str]
_WORD = frozenset(string.ascii_letters + string.digits)


class _Tables(NamedTuple):
    """The prefix tables and their scans: built at the first text with a long run of
    token characters (most texts have none), not at import."""

    scan: re.Pattern[str]
    candidates: dict[str, list[tuple[int, str, str]]]
    short_scan: re.Pattern[str]
    short_groups: dict[str, tuple[str, int]]
    long_scan: re.Pattern[str]
    long_candidates: dict[str, list[tuple[int, str, str]]]


@functools.cache
def _by_prefix() -> dict[str, list[_Rule]]:
    """Every format's prefix, and the rules (kind, body) that start with it."""
    out: dict[str, list[_Rule]] = {}
    for kind, prefixes, body in FORMATS:
        for prefix in prefixes.split():
            out.setdefault(prefix, []).append((kind, body))
    return out


@functools.cache
def _tables() -> _Tables:
    by_prefix = _by_prefix()
    ordered = sorted(by_prefix)
    # For each prefix, the rules of every prefix it starts with, longest first: when
    # "sk-ant-" is found but its body does not fit, "sk-" is tried.
    candidates: dict[str, list[tuple[int, str, str]]] = {
        found: [
            (len(prefix), kind, body)
            for prefix in sorted(ordered, key=len, reverse=True)
            if found.startswith(prefix)
            for kind, body in by_prefix[prefix]
        ]
        for found in ordered
    }
    # Bodies that may scan far (over 320 characters) are tried from Python, with the
    # skips in _long_formats; the others are joined to their prefixes in one pattern.
    long = frozenset(
        body
        for _, _, body in FORMATS
        if re.search(r"\{[0-9]+,\}|,(?:3[2-9][0-9]|[4-9][0-9]{2}|[0-9]{4,})\}", body)
    )
    short_rules = {
        prefix: short
        for prefix, rules in by_prefix.items()
        if (short := [(k, b) for k, b in rules if b not in long])
    }
    short_source, short_groups = _joined(short_rules)
    long_rules = {p: [r for r in rules if r[1] in long] for p, rules in by_prefix.items()}
    return _Tables(
        scan=re.compile(_trie(ordered), _F),
        candidates=candidates,
        short_scan=re.compile(short_source, _F),
        short_groups=short_groups,
        long_scan=re.compile(_trie(sorted(p for p, rules in long_rules.items() if rules)), _F),
        long_candidates={
            found: [c for c in candidates[found] if c[2] in long] for found in candidates
        },
    )


def _joined(rules: dict[str, list[tuple[str, str]]]) -> tuple[str, dict[str, tuple[str, int]]]:
    """One trie-shaped pattern of prefixes, each followed by its bodies (longer prefixes
    first, so that "sk-ant-" is tried before "sk-"), with a group per body."""
    groups: dict[str, tuple[str, int]] = {}
    root: dict[str, dict] = {}  # type: ignore[type-arg]
    for prefix in rules:
        node = root
        for char in prefix:
            node = node.setdefault(char, {})
        node[""] = {"prefix": prefix}

    def emit(node: dict[str, dict]) -> str:  # type: ignore[type-arg]
        branches = [re.escape(c) + emit(child) for c, child in sorted(node.items()) if c]
        if "" in node:
            prefix = node[""]["prefix"]
            for kind, body in rules[prefix]:
                name = f"g{len(groups)}"
                groups[name] = (kind, len(prefix))
                branches.append(f"(?P<{name}>{body})")
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return "(?<![A-Za-z0-9])" + emit(root), groups


@functools.cache
def _compiled(source: str) -> re.Pattern[str]:
    """A format's body pattern, compiled when first needed: most texts hold no token, and
    compiling all ~150 at import would slow every hook that starts cold."""
    return re.compile(source, _F)


_BULK = lazy(r"[A-Za-z0-9_-]*+", _F)

# Long runs of token characters, found on a byte translation of the text.
MIN_TOKEN = 14  # the shortest format, xoxb- and ten characters, is 15
_TOKEN_CHARS = string.ascii_letters + string.digits + "_.+/=$!%~:-"
_TOKEN_BYTES = bytes(ord("a") if chr(b) in _TOKEN_CHARS else ord(" ") for b in range(256))
_NEEDLE = b"a" * MIN_TOKEN


def token_runs(raw: bytes) -> Iterator[tuple[int, int]]:
    """Where the runs of 16+ token characters are in ``raw`` (one byte per character)."""
    mapped = raw.translate(_TOKEN_BYTES)
    start = mapped.find(_NEEDLE)
    while start >= 0:
        end = mapped.find(b" ", start)
        if end < 0:
            end = len(raw)
        yield start, end
        start = mapped.find(_NEEDLE, end)


@functools.cache
def prefixes() -> dict[str, tuple[str, ...]]:
    """Every format's prefix, by its first two characters (each is at least two)."""
    out: dict[str, list[str]] = {}
    for prefix in _by_prefix():
        out.setdefault(prefix[:2], []).append(prefix)
    return {pair: tuple(found) for pair, found in out.items()}


# A run longer than this is left to the tables: looking for prefixes from Python would
# cost more than the scans.
PRECHECK_RUN = 256


def holds_prefix(text: str, lo: int, hi: int) -> bool:
    """Whether some format's prefix starts a word of the run `text[lo:hi]`: a prefixed
    format can match only there (its scans need one, not after a letter or digit). A run
    without one (a model's name, "claude-opus-4-5", most paths) needs no tables, whose
    first build compiles one pattern of all ~170 bodies."""
    if hi - lo > PRECHECK_RUN:
        return True
    by_pair = prefixes()
    for pos in range(lo, hi - 1):
        if pos and text[pos - 1] in _WORD:
            continue
        for prefix in by_pair.get(text[pos : pos + 2], ()):
            if text.startswith(prefix, pos, hi):
                return True
    return False


def find_formats(text: str, raw: bytes, add: Callable[[_Span], None]) -> None:
    """Add the spans of every prefixed and middle-anchored token format."""
    for lo, hi in token_runs(raw):
        if not holds_prefix(text, lo, hi):
            _discord(text, raw, lo, hi, add)
            continue
        tables = _tables()  # built at the first run with a prefix in it (cached)
        # Formats with short bodies: prefix and body in one pattern, so that the regex
        # engine alone rejects what does not fit ("1/1/1/..." costs no Python).
        for m in tables.short_scan.finditer(text, lo, hi):
            group = m.lastgroup or ""
            kind, size = tables.short_groups[group]
            if _plausible(kind, m.group(group)):
                add((m.start(), m.end(), kind))
            else:  # another format with the same start may fit
                found = _match_candidates(text, m.start(), m.group()[:size], hi, skip=kind)
                if found is not None:
                    add(found)
        _long_formats(text, lo, hi, add)
        _discord(text, raw, lo, hi, add)
    for (kind, back, pattern), fixed in zip(OTHER, _OTHER_FIXED, strict=True):
        if fixed not in text:  # a substring test is much cheaper than a scan
            continue
        for m in pattern.finditer(text):
            begin = m.start() - back
            if kind == "telegram_token":  # 8 to 10 digits, standing alone
                while begin > 0 and text[begin - 1].isdigit() and m.start() - begin < 10:
                    begin -= 1
                if begin > 0 and text[begin - 1] in _WORD and not text.endswith("bot", 0, begin):
                    continue  # part of a longer word, but api.telegram.org/bot<token> is one
            add((begin, m.end(), kind))
    if "hook" not in text:
        return
    for m in _WEBHOOKS.finditer(text):
        host = m.group("host")
        kind = next((k for h, k in _WEBHOOK_KIND.items() if h in host), "teams_webhook")
        if len(set(m.group("s").replace("/", ""))) > 4:  # not XXX/YYY/ZZZ, T000/B000/XXXX
            add((m.start("s"), m.end("s"), kind))


def _discord(text: str, raw: bytes, lo: int, hi: int, add: Callable[[_Span], None]) -> None:
    """Discord's bot tokens, which have no prefix: three dotted parts."""
    if raw.find(b".", lo, hi) >= 0:
        for m in _DISCORD.finditer(text, lo, hi):
            add((m.start(), m.end(), "discord_token"))


# Short or word-like prefixes whose bodies could be identifiers: the body must also have
# a digit (d), both cases (c), or something that is not a hex digit (x).
_CHECKS = {
    "resend_key": "dc",
    "cratesio_token": "dc",
    "notion_token": "d",
    "octopus_key": "d",
    "bitbucket_token": "d",
    "dropbox_token": "d",
    "huggingface_token": "c",
    "render_key": "dc",
    "infracost_key": "x",
    "clickhouse_key": "x",
    "figma_token": "d",
    "pinecone_key": "d",
    "circleci_token": "d",
    "openai_key": "d",  # sk-learn-..., sk-my-own-words
    "adobe_secret": "d",
    "adafruit_key": "d",
    "lichess_token": "c",
    "vault_token": "dc",  # s.<24>: not s.getElementsByTagName
    "yandex_key": "dc",
    "settlemint_token": "d",
    "posthog_key": "d",
    "zuplo_key": "d",
}
_HEX = frozenset(string.hexdigits)


_PLACEHOLDER_BODY = lazy(r"(?:^|[-_])(?:your|here|example|placeholder)(?:[-_]|$)", re.I)


# A JWT with no signature after its second dot: an unsecured token (alg "none"), or the
# docs' example with "<signature>" after it. It proves nothing, so it is no credential.
_UNSIGNED_JWT = lazy(r"eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.(?![A-Za-z0-9_-])", _F)


def unsigned_jwt(value: str) -> bool:
    return _UNSIGNED_JWT.match(value) is not None


def _plausible(kind: str, body: str) -> bool:
    if kind == "jwt" and body.endswith("."):
        return False  # no signature: see _UNSIGNED_JWT
    if (body.count("x") + body.count("X")) * 2 >= len(body):
        return False  # a placeholder of the format's shape: ghp_xxxx..., AKIAXXXX...
    if _PLACEHOLDER_BODY.search(body):
        return False  # xoxb-your-token-here, sk-your-key
    checks = _CHECKS.get(kind)
    if checks is None:
        return True
    if "d" in checks and not any(c.isdigit() for c in body):
        return False
    if "c" in checks and (body.isupper() or body.islower() or not any(c.isalpha() for c in body)):
        return False
    return not ("x" in checks and all(c in _HEX for c in body))


def _long_formats(text: str, lo: int, hi: int, add: Callable[[_Span], None]) -> None:
    """Formats whose bodies may run for hundreds of characters.  A prefix inside a token
    already found adds nothing, and one inside a body that a format refused ("sk-sk-..."
    has no digit) would be refused again: skipping both keeps repeated prefixes linear."""
    covered = lo
    refused: dict[str, int] = {}
    tables = _tables()
    for m in tables.long_scan.finditer(text, lo, hi):
        start = m.start()
        if start < covered or (start and text[start - 1] in _WORD):
            continue  # inside a longer word: "task-..." is not "sk-..."
        for size, kind, source in tables.long_candidates[m.group()]:
            if start < refused.get(kind, -1):
                continue
            b = _compiled(source).match(text, start + size, hi)
            if b is None:
                # a later start in the same run would scan as far and fail alike
                r = _BULK.match(text, start + size, hi)
                refused[kind] = r.end() if r else start + size
                continue
            if _plausible(kind, text[start + size : b.end()]):
                add((start, b.end(), kind))
                covered = b.end()
                break
            refused[kind] = b.end()


def _match_candidates(text: str, pos: int, prefix: str, hi: int, skip: str = "") -> _Span | None:
    """The first format of ``prefix`` (or a shorter prefix) whose body fits at ``pos``."""
    for size, kind, source in _tables().candidates.get(prefix, []):
        if kind == skip:
            continue
        b = _compiled(source).match(text, pos + size, hi)
        if b is not None and _plausible(kind, text[pos + size : b.end()]):
            return (pos, b.end(), kind)
    return None


def match_at(text: str, pos: int) -> _Span | None:
    """A token that starts exactly at ``pos``, whatever comes before it: for tokens glued
    to the end of another secret (a key right after the dashes of a PEM END line)."""
    m = _tables().scan.match(text, pos)
    return None if m is None else _match_candidates(text, pos, m.group(), len(text))

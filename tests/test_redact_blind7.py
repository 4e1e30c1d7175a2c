"""The redactor on the blind7 corpus (tests/fixtures/secrets_blind7), written before its
author read the redaction code: look-alikes a developer pastes into a chat with a coding
agent (lockfiles, git output, digests, ids, public keys, base64 in code, CSS and minified
JS, traces, prose and placeholders), with secrets among them. Floors a little under the
figures reached, so that a regression fails; `python
tests/fixtures/secrets_blind7/blind7_score.py -v` prints the misses and changes per genre.
Then one test per shape the corpus found over-redacted."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from helpers import load_module, redaction_seconds
from kenning.redact import redact

_HERE = Path(__file__).parent / "fixtures" / "secrets_blind7"
scorer = load_module(_HERE / "blind7_score.py", "blind7_score")

REMOVED = 0.99
UNCHANGED = 0.99
OVER = 0.07  # characters outside the secrets that redaction removed (a signed JWT goes whole)


def test_the_corpus_has_300_look_alikes_and_100_secrets() -> None:
    cases = scorer.blind7_corpus.build()
    assert sum(c["kind"] == "lookalike" for c in cases) >= 300
    assert sum(c["kind"] == "secret" for c in cases) >= 100


def test_the_redactor_removes_the_blind7_secrets_and_keeps_the_look_alikes() -> None:
    result = scorer.score(lambda t: redact(t).text)
    assert result["removed"] / result["secrets"] >= REMOVED, result["missed"]
    assert result["unchanged"] / result["lookalikes"] >= UNCHANGED, result["changed"]
    assert result["over_rate"] <= OVER, result["over_cases"]


def _gone(text: str, secret: str) -> str:
    out = redact(text).text
    assert secret not in out and secret[-8:] not in out, out
    return out


def _kept(text: str) -> None:
    assert redact(text).text == text


# a header and a payload, as the docs of JWT write them (base64url of JSON)
_HEAD = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0"
_BODY = "eyJzdWIiOiJ1c2VyLTEyMyIsInNjb3BlIjoicmVhZCJ9"
_SIG = "BWskloAzSXdf57FOas5VLphl_W0o4Ds8h9Z3R_L8Hfc"  # fake


def test_a_jwt_without_a_signature_is_no_credential() -> None:
    _kept(f"An unsecured JWT has an empty signature part:\n\n    {_HEAD}.{_BODY}.\n")
    _kept(f"Authorization: Bearer {_HEAD}.{_BODY}.<signature>\n")
    _gone(f"Authorization: Bearer {_HEAD}.{_BODY}.{_SIG}\n", _SIG)
    _gone(f"token={_HEAD}.{_BODY}.{_SIG}", _SIG)


def test_a_camel_case_name_that_starts_with_a_verb_is_a_function() -> None:
    _kept('{"names": ["password", "setToken", "useState"], "mappings": "AAAA"}')
    _kept('exports: ["getApiKey", "useAuthToken", "loadSecret", "Provider"]')
    _gone('env.put("apiToken", "Xq7Lm2vKp9RtYb8Nc3")', "Xq7Lm2vKp9RtYb8Nc3")
    _gone('os.Setenv("refreshToken", "Vb3Nq8Lw2ZxKp5Rt7Y")', "Vb3Nq8Lw2ZxKp5Rt7Y")


def test_a_secret_word_before_a_metadata_word_names_no_secret() -> None:
    _kept("GITHUB_TOKEN Permissions\n  Contents: read\nSecret source: Actions\n")
    _kept("Token type: Bearer\nsecret name: Opaque\n")
    _gone("the password for root on db-1: Quartz7Lantern9", "Quartz7Lantern9")
    _gone("the secret for staging: swordfish42", "swordfish42")


def test_the_name_of_a_secret_given_as_a_value_stays() -> None:
    _kept("gcloud secrets versions access latest --secret=stripe-key\n")
    _kept("--secret=db-password --token=github-token SECRET=signing_key\n")
    _kept('FAKE_TOKEN = "test-token"\nmonkeypatch.setenv("API_KEY", "fake-key")\n')
    _kept('const client = new Client({ secret: "dummy-secret" });\n')
    _gone("--secret=Xq7Lm2vKp9-key", "Xq7Lm2vKp9-key")
    _gone("DB_PASSWORD=harbor-lantern-quartz", "harbor-lantern-quartz")


def test_a_trace_context_header_and_a_cache_key_are_not_secrets() -> None:
    ctx = "AAARN2Yz3h0RRaWmKb6wHAIBy8lZNnW9+mQCAA=="  # binary trace context, base64
    _kept(f"grpc-trace-bin: {ctx}\nx-cloud-trace-context: 105445aa7843bc8bf206b12000100000/1;o=1\n")
    _kept("Cache key: v2-deps-p11EQGTPVYE0cNlIetWqUPNt0tKP4i4k3P93bAIN\n")
    _kept("Restoring cache from v2-deps-e26cbaf59db9320cd97c220582f7e93ad05680a4\n")
    _gone(f"x-api-key: {ctx}\n", ctx)


def test_base64_of_a_protobuf_file_descriptor_is_generated_code() -> None:
    desc = b"\n\x16search/v1/search.proto\x12\tsearch.v1" + bytes(range(200, 240))
    run = base64.b64encode(desc).decode()
    _kept(f'const fileDescriptor =\n  "{run}";\n')
    secret = base64.b64encode(b"\n\x16" + bytes(range(100, 140))).decode()
    _gone(f'const key = "{secret}";\n', secret)


@pytest.mark.parametrize(
    "unit",
    [
        f"{_HEAD}.{_BODY}. ",
        '["setToken", "useState"] ',
        "Secret source: Actions\n",
        "--secret=stripe-key ",
        "grpc-trace-bin: AAARN2Yz3h0RRaWmKb6wHAIBy8lZNnW9+mQCAA==\n",
    ],
)
def test_the_new_rules_stay_linear(unit: str) -> None:
    def timed(size: int) -> float:
        return redaction_seconds(unit, size)

    small, large = timed(16_000), timed(64_000)
    # 4x the text, about 4x the time (not 16x); under 0.1 s, a loaded machine's noise
    assert large < max(small * 8, 0.1)


def test_ordinary_code_and_docs_about_secrets_stay() -> None:
    # what the false-positive measurement over installed Python packages found changed
    _kept('TOKEN = "[a-zA-Z_][a-zA-Z0-9_-]*"\n')
    _kept("    pass_fds=pass_fds,\n")
    _kept("# It's unnecessary to use a token if the repo is public\n")
    _kept("token: The token from which this block is built.\n")
    _gone("postgres://user:Quartz7Lantern9@localhost:5432/shop", "Quartz7Lantern9")
    _gone("TOKEN = 'Xq7Lm2vKp9RtYb8Nc3'\n", "Xq7Lm2vKp9RtYb8Nc3")
    _gone("the password for the db is swordfish42", "swordfish42")

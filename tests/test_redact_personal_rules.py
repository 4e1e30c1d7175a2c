"""The redactor's rules for what a person pastes: password-manager exports, passphrases,
cards and PINs, seed phrases, what a command prints, and the look-alikes from the same
places (the personal-secrets corpus, tests/fixtures/secrets_personal, found them; each
case here is written for the rule, not taken from the corpus)."""

from __future__ import annotations

import pytest

from kenning.redact import redact


def _gone(text: str, *secrets: str) -> str:
    out = redact(text).text
    for secret in secrets:
        assert secret not in out, out
    return out


@pytest.mark.parametrize(
    "text",
    [
        '"dependencies": {\n  "jsonwebtoken": "^9.0.2",\n  "passport-local": "~1.0.0"\n}',
        '"devDependencies": { "@types/jsonwebtoken": "9.0.7" }',
        'tokenizers = ">=0.19,<0.21"',
        "[user]\n\tname = Ana\n\tsigningkey = 3AA5C34371567BD2\n[commit]\n\tgpgsign = true",
        "git config --global user.signingkey 0x3AA5C34371567BD2",
        "Token: ghp_\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022Xq7d",
        "API key: sk-\u25cf\u25cf\u25cf\u25cf\u25cf\u25cf\u25cf\u25cf4f2a",
        "SOL: 7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU",
        "send it to my Solana address 9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
        "wifi_password: !secret wifi_password\napi_password: !secret esphome_api",
    ],
)
def test_versions_key_ids_masked_values_addresses_and_references_are_left(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ('JWT_SIGNING_KEY = "Qm9vb3Rz7hX2kLpV9dZr4wYc"', "Qm9vb3Rz7hX2kLpV9dZr4wYc"),
        ('"token": "9.0.2a7Xk3pQ8vLm2"', "9.0.2a7Xk3pQ8vLm2"),
        (
            "Token: ghp_Xq7dLm2vKp9sTr4wYz6bNc8hJf3gHq1eAa5u",
            "ghp_Xq7dLm2vKp9sTr4wYz6bNc8hJf3gHq1eAa5u",
        ),
        (
            "api token: 3yRkq7v2WJtB8mXcLpZ9dQe4aHs5nGfUoK",
            "3yRkq7v2WJtB8mXcLpZ9dQe4aHs5nGfUoK",
        ),
    ],
)
def test_secrets_next_to_those_look_alikes_still_go(text: str, secret: str) -> None:
    _gone(text, secret)

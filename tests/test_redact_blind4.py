"""The redactor on the blind4 corpus (tests/fixtures/secrets_blind4), written before its
author read the redaction code: what an agent's tools print and what people paste from
terminals and browsers, and the same outputs masked. Floors a little under the figures
reached, so that a regression fails; `python tests/fixtures/secrets_blind4/blind4_score.py -v`
prints the misses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import load_module
from kenning.redact import redact

_HERE = Path(__file__).parent / "fixtures" / "secrets_blind4"
scorer = load_module(_HERE / "blind4_score.py", "blind4_score")

# Blind, on main at 0e51ab5: removed 94.9%, unchanged 94.6%; after the fixes 100.0% and
# 98.9% (the three left are AWS access key ids in a CloudTrail record, which the redactor
# removes on purpose).
REMOVED = 0.99
UNCHANGED = 0.98


def test_the_corpus_has_250_secrets_and_200_look_alikes() -> None:
    cases = scorer.blind4_corpus.build()
    secrets = [c for c in cases if c["kind"] == "secret"]
    assert len(secrets) >= 250
    assert len(cases) - len(secrets) >= 200
    assert all(s in c["text"] for c in secrets for s in c["secrets"])
    assert [c["text"] for c in scorer.blind4_corpus.build()] == [c["text"] for c in cases]


def test_the_redactor_removes_the_blind4_secrets_and_keeps_the_look_alikes() -> None:
    res = scorer.score(lambda s: redact(s).text)
    assert res["removed"] / res["secret"] >= REMOVED, f"removed {res['removed']}/{res['secret']}"
    assert res["unchanged"] / res["lookalike"] >= UNCHANGED, f"unchanged {res['unchanged']}"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # a bare value whose ( ... ) is glued to more of it (a Django SECRET_KEY)
        (
            '["DJANGO_SECRET_KEY=-k3rx^bnq6lwe%obfc&=j=3sw_l^8@i5c1m+*&^uqud(i)_zha","PATH=/usr/bin"]',
            "uqud(i)_zha",
        ),
        # terraform output -json: a value marked sensitive
        (
            '{\n  "db_password": {\n    "sensitive": true,\n    "type": "string",\n'
            '    "value": "harbor-meadow-lantern-45"\n  }\n}',
            "harbor-meadow-lantern-45",
        ),
        # terraform output -raw of a secret's name, pulumi's --show-secrets
        ("$ terraform output -raw admin_password\nWalnut%6446saffron", "Walnut%6446saffron"),
        ("$ pulumi stack output dbPassword --show-secrets\nQv7!rbn-Tz2k", "Qv7!rbn-Tz2k"),
        # heroku auth:token's output after its warning lines
        (
            "$ heroku auth:token\n \u203a   Warning: token will expire 06/01/2025\n"
            " \u203a   Use heroku authorizations:create to generate a long-term token\n"
            "2eeb0d16-85f2-4151-b414-a51eff2571ac",
            "2eeb0d16-85f2-4151-b414-a51eff2571ac",
        ),
        # a HAR file's cookies, a name and a value
        (
            '"cookies": [{"name": "PHPSESSID", "value": "p6bb7hw4ivjt6buxq8aae131ay"}]',
            "p6bb7hw4ivjt6buxq8aae131ay",
        ),
        # psql's expanded display
        (
            "-[ RECORD 1 ]---+------\nid              | 4\nsecret          | Violet!6719tundra\n"
            "updated_at      | 2024-05-30 11:00:00",
            "Violet!6719tundra",
        ),
        # redis-cli: CONFIG GET requirepass, MONITOR's AUTH, AUTH at the prompt
        (
            "127.0.0.1:6379> CONFIG GET requirepass\n"
            '1) "requirepass"\n2) "ember-meadow-saffron-17"',
            "ember-meadow-saffron-17",
        ),
        (
            '1717236000.123456 [0 10.0.0.7:51234] "AUTH" "default" "HdFzao6d%Vqwq6NQ"\n',
            "HdFzao6d%Vqwq6NQ",
        ),
        ("127.0.0.1:6379> AUTH default Xk29pqLmz7", "Xk29pqLmz7"),
        # echo -n 'user:X' | base64: X and what base64 prints
        (
            "$ echo -n 'admin:Raven!2606tundra' | base64\nYWRtaW46UmF2ZW4hMjYwNnR1bmRyYQ==",
            "Raven!2606tundra",
        ),
        (
            "$ echo -n 'admin:Raven!2606tundra' | base64\nYWRtaW46UmF2ZW4hMjYwNnR1bmRyYQ==",
            "YWRtaW46UmF2ZW4hMjYwNnR1bmRyYQ==",
        ),
    ],
)
def test_a_fixed_miss_is_removed(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize(
    "text",
    [
        "WT_SESSION=92f9336a-9eb3-4aac-992e-7874bd55d613",
        "postgresql:\n  auth:\n    existingSecret: shop-db\n    secretKeys:\n"
        "      adminPasswordKey: postgres-password\n      userPasswordKey: password",
        "Cache restored from key: node-cache-Linux-x64-npm-"
        "ebc5f3366cc0eb12af9ada014e581b10de166837fcc321f26e0c1867fd45f872",
        "https://accounts.google.com/o/oauth2/v2/auth?response_type=code&client_id=1234-abc"
        "&code_challenge=PeHUq7bUv8_rV5Ux5gSnj8wCLCslKPBFbCctB3Mj6UZ&code_challenge_method=S256",
        '{"db_password": {"sensitive": true, "type": "string"}, '
        '"endpoint": {"sensitive": false, "type": "string", "value": "db.example.com"}}',
        "$ terraform output -raw vpc_id\nvpc-0abc123def4567890",
        "$ echo -n 'hello:world' | base64\naGVsbG86d29ybGQ=",
        "the auth flow is described below\nUse basic auth here",
    ],
)
def test_a_look_alike_stays(text: str) -> None:
    assert redact(text).text == text

"""The redactor on the blind6 corpus (tests/fixtures/secrets_blind6), written before its
author read the redaction code: what a coding agent's session carries (diffs, transcript
lines, coloured tool output, shell sessions, traces, logs, dumps, copied requests) and the
same shapes holding hashes, ids, public keys and placeholders. Floors a little under the
figures reached, so that a regression fails; `python
tests/fixtures/secrets_blind6/blind6_score.py -v` prints the misses per genre. Then one test
per format the corpus found missing or misread."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import load_module, redaction_seconds
from kenning.redact import redact

_HERE = Path(__file__).parent / "fixtures" / "secrets_blind6"
scorer = load_module(_HERE / "blind6_score.py", "blind6_score")

REMOVED = 0.99
UNCHANGED = 0.99
OVER = 0.02  # characters outside the secrets that redaction removed


def test_the_corpus_has_200_secrets_and_120_look_alikes_in_every_genre() -> None:
    cases = scorer.blind6_corpus.build()
    assert sum(c["kind"] == "secret" for c in cases) >= 200
    assert sum(c["kind"] == "lookalike" for c in cases) >= 120
    assert len({c["genre"] for c in cases if c["kind"] == "secret"}) >= 19


def test_the_redactor_removes_the_blind6_secrets_and_keeps_the_look_alikes() -> None:
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


def test_a_value_between_colour_codes() -> None:
    # fake password and key, as a tool colours NAME=value
    out = _gone("  \x1b[32mREDIS_PASSWORD\x1b[0m=\x1b[33mLantern-Quartz42!\x1b[0m\n", "Quartz42!")
    assert out == "  \x1b[32mREDIS_PASSWORD\x1b[0m=\x1b[33m[redacted:secret_assignment]\x1b[0m\n"
    _gone("\x1b[1mAPI_TOKEN\x1b[22m: \x1b[36mf3Kq9ZpL2xVw7RtYb8Nc\x1b[39m", "f3Kq9ZpL2xVw7RtYb8Nc")
    _kept("\x1b[32mNODE_ENV\x1b[0m=\x1b[33mdevelopment\x1b[0m\n\x1b[31mFAILED\x1b[0m 2 tests")


def test_a_json_encoders_unicode_escapes_read_as_the_characters_they_stand_for() -> None:
    sig = "83f420f511245f1de0672fd04d61481fad339fb340119767194c080ecbe32016"  # fake
    _gone('{"content": "GET https://x.example/e?page\\u003d2\\u0026sig\\u003d' + sig + '"}', sig)
    _kept(
        '{"content": "GET https://api.example.net/v2/runs?run_id'
        '\\u003d0bd524be-e666-4887-a2cd-91ef102daf83\\u0026page\\u003d2 -> 200"}'
    )


def test_a_masked_value_after_its_prefix() -> None:
    _kept("ANTHROPIC_API_KEY=sk-ant-*** (set)\nGH_TOKEN=ghp_***\n")
    _gone("PASSWORD=Qx7pLm2v***\n", "Qx7pLm2v")


def test_the_value_echo_prints_of_a_variable_named_as_a_secret() -> None:
    _gone(
        "[root@web-3 ~]# echo $DATADOG_API_KEY\ne81359649439ac47555a293942d7563b\n[root@web-3 ~]#",
        "e81359649439ac47555a293942d7563b",
    )
    _gone("$ printenv DB_PASSWORD\nLantern-Quartz42!\n", "Lantern-Quartz42!")
    _kept("$ echo $HOME\n/home/dev\n$ echo $API_KEY\nnot set\n$ echo $TOKEN_COUNT\n4096\n")
    _kept("$ echo $SSH_PUBLIC_KEY\nAAAAC3NzaC1lZDI1NTE5AAAAIabcdefgh\n")


# fake WireGuard keys: 32 bytes in base64
_WG_A = "riGp/58WAm+dX3a5IDnOdcdbWB2dC4/DSDC6Lc1mxLM="
_WG_B = "Q2yMK/Ye9FZ1wUVl4nuYV+d8fNYvvDbzDZST6IaXqA0="


def test_a_wireguard_public_key_stays_and_a_private_key_goes() -> None:
    _kept(f"$ wg pubkey < privatekey\n{_WG_A}\n")
    _kept(f"# wg genkey | tee privatekey | wg pubkey\n{_WG_A}\n")
    _kept(f"root@vpn:~# cat publickey\n{_WG_A}\nroot@vpn:~# wg show wg0 peers\n{_WG_A}\n{_WG_B}\n")
    _kept(f"[Peer]\nPublicKey = {_WG_B}\nAllowedIPs = 10.0.0.2/32\n")
    _gone(f"[Interface]\nPrivateKey = {_WG_A}\nAddress = 10.0.0.1/24\n", _WG_A)
    _gone(f"$ wg genkey\n{_WG_A}\n", _WG_A)
    _gone(f"$ cat privatekey\n{_WG_A}\n", _WG_A)
    _gone(f"here it is:\n{_WG_A}\n", _WG_A)  # no word says it is public


def test_an_oauth_state_is_not_a_secret_but_its_code_is() -> None:
    state = "Xq7Lm2vKp9RtYb8NcZ3wJh6Fd4Gs1Ae5"  # fake
    _kept(
        "https://login.example.com/oauth2/v2.0/authorize?client_id=app&response_type=code"
        f"&redirect_uri=http%3A%2F%2Flocalhost%3A8400%2Fcb&scope=openid&state={state}"
    )
    code = "Vb3Nq8Lw2ZxKp5Rt7Yc9Md4Hf6Js1Ga0Xe"  # fake
    out = _gone(f"https://app.example.com/oauth/callback?code={code}&state={state}", code)
    assert state in out


def test_a_flag_on_a_line_a_backslash_continues() -> None:
    out = _gone(
        'curl -sS \\\n  -H "Accept: application/json" \\\n  -u "bot:Ravenkestrel491iRs37" \\\n'
        "  https://api.example.com/x",
        "Ravenkestrel491iRs37",  # fake
    )
    assert 'Accept: application/json" \\\n  -u "bot:' in out
    _gone("mysql \\\n  -u app \\\n  -pQuartz7Lantern9 shop", "Quartz7Lantern9")
    _kept("docker run \\\n  -p 8080:8080 \\\n  -u 1000:1000 shop/api:1.4")
    _kept("curl -s https://x.example/a\n  -u is the user flag of curl, see above")


def test_a_session_id_cookie_and_a_cookie_made_in_code() -> None:
    sid = "UNS7qIH1y_0_WHoFXbe80wn0fL9HDLRU9a5HVKwSSuK2V8E2"[:30]  # fake, cut below 32
    _gone(f'    "cookie": "session_id={sid}; consent=yes"', sid)
    _gone(f"Cookie: theme=dark; session-id={sid}", sid)
    no_digit = "RJiWQBaevOjreXbbB-_CYsBVtj-rFyAG"  # fake, random letters without a digit
    _gone(
        '(New-Object System.Net.Cookie("ASP.NET_SessionId", "' + no_digit + '", "/", "host"))',
        no_digit,
    )
    _gone(
        'Cookie c = new Cookie("JSESSIONID", "8F2A9C1D4E7B3A6F0C5D2E");', "8F2A9C1D4E7B3A6F0C5D2E"
    )
    _kept('new Cookie("theme", "dark-mode-2024-compact-v2")\nnew Cookie("JSESSIONID", sid)')
    _kept("log.info('session_id=%s', sid)\nuser_session_id=abc\nsession_id=user_session_backup")


def test_the_rows_of_a_pg_dump_copy_block_under_a_secret_column() -> None:
    token = "6899212cbfaea1195e378c92d996592697f75bfe29c6d3c28da777cf62fa0c68"  # fake
    out = _gone(
        "COPY public.api_tokens (id, user_id, token, scopes) FROM stdin;\n"
        f"1\t17\t{token}\tread\n2\t23\t\\N\tread,write\n\\.\n",
        token,
    )
    assert "1\t17\t[redacted:" in out and "\\N\tread,write" in out
    _kept(
        "COPY public.builds (id, commit_sha, token_hash, token_count) FROM stdin;\n"
        f"1\t{token[:40]}\t{token}\t3\n\\.\n"
    )


def test_a_cache_key_of_words_and_a_digest_and_a_graphql_type() -> None:
    digest = "12e898fa983b738f2a2cebabfca6dd0ce4e8417e152819af51c8c0d5014b7178"
    _kept(f"[10:00:02] Cache restored from key: node-modules-{digest}\n")
    _kept("type Mutation {\n  login(email: String!, password: String!): AuthPayload\n}\n")
    _kept("  resetPassword(token: String!, newPassword: String!): Boolean\n  tokens: [ID!]!\n")
    _gone("password: Sunshine!\n", "Sunshine!")
    _gone(f"key: sk-{digest}\n", digest)


@pytest.mark.parametrize(
    "unit",
    [
        "\x1b[32mPASSWORD\x1b[0m=\x1b[33mQx7pLm2v!\x1b[0m ",
        "\x1b[",
        "\\u003d",
        "a\\u0026b\\u003dc ",
        "echo $API_KEY\n",
        "wg pubkey\n" + _WG_A + "\n",
        "?state=" + _WG_B[:40] + "&",
        "curl \\\n",
        "curl -u \\\n",
        'Cookie("a", "b") ',
        "COPY t (token) FROM stdin;\n",
        "COPY t (token) FROM stdin;\nabc\tdef\n",
        "session_id=ab12 ",
    ],
)
def test_the_new_rules_stay_linear(unit: str) -> None:
    def timed(size: int) -> float:
        return redaction_seconds(unit, size)

    assert timed(200_000) < 0.2 * 5  # generous on a loaded machine
    small, large = timed(16_000), timed(64_000)
    # 4x the text, about 4x the time (not 16x); under 0.1 s, a loaded machine's noise
    assert large < max(small * 8, 0.1)

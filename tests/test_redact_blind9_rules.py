"""The general rules behind blind9's findings (tests/fixtures/secrets_blind9): each test
holds one rule on values and contexts other than the corpus's own."""

from __future__ import annotations

import pytest

from kenning.redact import redact

# --- an escaped line break in a JSON string ends a value as a real one does ---------------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # an empty value: the next variable is not its value
        (
            '{"output": "USER=dev\\nSTRIPE_SECRET_KEY=\\nEDITOR=vim\\nSHELL=/bin/zsh"}',
            "EDITOR=vim\\nSHELL=/bin/zsh",
        ),
        # a value ends at the escape, and what follows stays
        (
            '{"content": "DB_PASSWORD=Vq8rT2xLm9Pw\\r\\nTZ=UTC\\r\\nLOGNAME=ana"}',
            "\\r\\nTZ=UTC\\r\\nLOGNAME=ana",
        ),
        (
            '["SLACK_TOKEN=xoxb-2741-99182-Rk3uTqz8LmV1nWb7\\tMAIL=/var/mail/ana\\tUSER=ana"]',
            "\\tMAIL=/var/mail/ana\\tUSER=ana",
        ),
        # a line of a log that ends with a secret's word: the next line's hash is no value
        (
            '{"stdout": "9f1c2e3 Keep the secret in the keychain\\n'
            '4b9d0e7a1c2f3b4d5e6f708192a3b4c5d6e7f809 Tidy"}',
            "4b9d0e7a1c2f3b4d5e6f708192a3b4c5d6e7f809",
        ),
    ],
)
def test_an_escaped_line_break_in_a_json_string_ends_a_value(text: str, kept: str) -> None:
    assert kept in redact(text).text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            '{"content": "HOME=/root\\nAPI_TOKEN=Zq8vN3kR5tW1yX7bLm2p\\nPATH=/bin"}',
            "Zq8vN3kR5tW1yX7bLm2p",
        ),
        ('{"content": "a\\npassword: Lantern42Bridge!\\nb"}', "Lantern42Bridge!"),
        # a backslash that is not a JSON escape is part of the value (a Windows path's)
        ("PASSWORD=Xk9\\nQ2v#Lm8", "Xk9\\nQ2v#Lm8"),
        ('{"password": "C:\\\\new\\\\Xk9mQ2vLm8Zr"}', "Xk9mQ2vLm8Zr"),
    ],
)
def test_secrets_around_escaped_line_breaks_are_still_removed(text: str, secret: str) -> None:
    out = redact(text).text
    assert secret not in out and secret[-6:] not in out


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ('{"o": "password=\\tZq8!vR3#mT6kW9pL"}', "Zq8!vR3#mT6kW9pL", "password=\\t"),
        ('{"o": "DB_PASSWORD=\\tZq8!vR3#mT6kW9pL\\tx"}', "Zq8!vR3#mT6kW9pL", "\\tx"),
        # a shell's line continuation (an escaped backslash, then an escaped line break)
        (
            '{"o": "export PGPASSWORD=\\\\\\nZq8!vR3#mT6kW9pL\\nx"}',
            "Zq8!vR3#mT6kW9pL",
            "\\nx",
        ),
    ],
)
def test_an_escaped_tab_or_continuation_after_the_equals_sign_does_not_end_the_value(
    text: str, secret: str, kept: str
) -> None:
    out = redact(text).text
    assert secret not in out and secret[-6:] not in out
    assert kept in out


def test_an_escaped_line_break_after_the_equals_sign_still_ends_an_empty_value() -> None:
    text = '{"o": "OPENAI_API_KEY=\\nPATH=/usr/local/bin:/usr/bin"}'
    assert redact(text).text == text


# --- an array's element after a secret's name is not its value ----------------------------


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('"args": ["run", "--rm", "-e", "SLACK_BOT_TOKEN", "mcp/slack:latest"]', "mcp/slack"),
        ("args = ['run', '-i', '--env', 'NOTION_API_KEY', 'mcp/notion-server:1.4']", "mcp/notion"),
        ('["up", "-e", "DATABASE_PASSWORD", "postgres-primary-01"]', "postgres-primary-01"),
    ],
)
def test_an_array_element_after_a_secret_name_is_not_its_value(text: str, kept: str) -> None:
    assert kept in redact(text).text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ('"args": ["--api-key", "Zq8vN3kR5tW1yX7bLm2p"]', "Zq8vN3kR5tW1yX7bLm2p"),
        ('pairs = [["password", "Lantern42Bridge!"]]', "Lantern42Bridge!"),
        ('config.set("db", "password", "Lantern42Bridge!")', "Lantern42Bridge!"),
        ("define('AUTH_KEY', 'Xk9mQ2vLm8Zr#p4Tw7Yb')", "Xk9mQ2vLm8Zr#p4Tw7Yb"),
    ],
)
def test_a_flag_or_a_pair_or_a_call_still_gives_its_value(text: str, secret: str) -> None:
    assert secret not in redact(text).text


_P = "Zq8!vR3#mT6kW9pL"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f'cmd = ["heroku","config:set","DB_PASSWORD","{_P}"]', _P),
        (f'["HSET","user:1","password","{_P}"]', _P),
        (f'"env": ["HOST", "db", "PGPASSWORD", "{_P}"]', _P),
        (f'["x","token","{_P}"]', _P),
        (f'["x","client_secret","{_P}"]', _P),
        ('["x","password","hunter2hunter2"]', "hunter2hunter2"),
    ],
)
def test_an_array_element_after_a_name_not_after_docker_e_is_its_value(
    text: str, secret: str
) -> None:
    assert secret not in redact(text).text


def test_docker_e_name_then_the_image_is_still_left() -> None:
    text = (
        '["run","-i","--rm","-e","GITHUB_PERSONAL_ACCESS_TOKEN","ghcr.io/github/github-mcp-server"]'
    )
    assert redact(text).text == text


# --- a short hex digest in a listing is not a key ------------------------------------------


def test_a_value_under_a_digest_column_is_not_a_secret() -> None:
    text = (
        "NAME              SHA256            UPDATED\n"
        "OPENAI_API_KEY    9e1f4a7c02b3d8e6  2 days ago\n"
        "SENDGRID_TOKEN    07c4a9e2f1b8d3a5  5 days ago\n"
    )
    assert redact(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        "mixpanel project 3fa9c07b12e4d85a is the one to use",
        "honeycomb dataset ab40c9e17f2d3b86e5",
    ],
)
def test_a_short_hex_run_after_a_vendor_alone_is_not_its_key(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("PUSHER_APP_SECRET=9e1f4a7c02b3d8e6a4b1", "9e1f4a7c02b3d8e6a4b1"),
        ("KEY                  VALUE\nOPENAI_API_KEY       9e1f4a7c02b3d8e6", "9e1f4a7c02b3d8e6"),
        ("the pusher secret is 9e1f4a7c02b3d8e6a4b1", "9e1f4a7c02b3d8e6a4b1"),
    ],
)
def test_a_short_hex_secret_named_as_one_is_still_removed(text: str, secret: str) -> None:
    assert secret not in redact(text).text


# --- ids, public keys and ciphertext that are not secrets ----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # Twilio's resource ids: two capitals and 32 hex (a message, a call, a number...)
        '{"sid": "MM4e1f90a27c3b5d68e0f1a2b3c4d5e6f7", "status": "queued"}',
        "call_sid = 'CA9f8e7d6c5b4a39281706f5e4d3c2b1a0'",
        "<PhoneNumberSid>PN0a1b2c3d4e5f60718293a4b5c6d7e8f9</PhoneNumberSid>",
        # a ULID after a name: an id made of a time and randomness (also in the capitals
        # and digits that some tools write one in)
        "deploy id: web-01HZX3K9QF7M2T8V5R1NB4CJ6W",
        "  Image    = worker:deployment-01K7TQ2M9ZL4XN0OWB3P8YD5RC",
        "  Image    = api:release_01J8Q2ZP7T4N9M3X6V0R5K8B1D",
        # age's public key (the secret one is AGE-SECRET-KEY-1...)
        "age:\n  - recipient: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
        "--age age1yt3tfqlfrwdwx0z0ynwplcr6qxcxfaqycuprpmy89nr83ltx74tqdpszlw",
        "  - recipient: age1ib3o7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac1b",
        # Pulumi's encrypted config values: a salt and ciphertext, as SOPS and jasypt's
        "  api:stripeKey:\n    secure: v1:Qm9vZXJfc2FsdA==:Xk9mQ2vLm8ZrP4Tw7YbN3cR5tW1yV6uA0sD",
        '{"secure": "v1:b2RkbnVtYmVy:AAABAJx9Lm3Qp7Rz2Tv8Wy4Nc6Hk0Fd5Gj1Bs"}',
        # a Vault token's accessor: it looks the token up or revokes it, never logs in
        "token_accessor       3v6Ctn2vjGc8FOJhRiYPLD2w",
        '{"accessor": "8mKpQ2wZr7Tn4Xv9Lb3Yc6Hd"}',
    ],
)
def test_an_id_a_public_key_or_ciphertext_is_not_a_secret(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("TWILIO_AUTH_TOKEN=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
        (
            "AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSQGPQYQ",
            "QYQSZQGPQYQSZQGPQYQSZQGP",
        ),
        ("token                hvs.CAESIJk8Pieg60yf9c92rl0S5j1mdMh7docAo", "CAESIJk8Pieg60yf"),
        ("secure_token: Xk9mQ2vLm8ZrP4Tw7YbN3cR5tW1yV6uA0sD", "Xk9mQ2vLm8ZrP4Tw7YbN"),
    ],
)
def test_the_secret_beside_such_ids_is_still_removed(text: str, secret: str) -> None:
    assert secret not in redact(text).text


# --- a key made to be public -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "NEXT_PUBLIC_SUPABASE_PUBLISHABLE_KEY=sb_publishable_Qm3Xk9vT2rLp8Zw4Nc7Yb1HdFs0GaJe",
        "const supabase = createClient(url, 'sb_publishable_8Hd2Kq9mPzX4vT7rLw1Nc3Yb5')",
    ],
)
def test_a_supabase_publishable_key_is_public(text: str) -> None:
    assert redact(text).text == text


def test_a_supabase_secret_key_beside_it_is_still_removed() -> None:
    secret = "sb_secret_Qm3Xk9vT2rLp8Zw4Nc7Yb1HdFs0GaJe"
    assert secret[10:] not in redact(f"SUPABASE_SECRET_KEY={secret}").text


@pytest.mark.parametrize(
    "text",
    [
        "SUPABASE_KEY=sb_publishable_wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9Q3kLm2X8",
        "SUPABASE_KEY=sb_publishable_Zq8!vR3#mT6kW9pL",
    ],
)
def test_sb_publishable_before_another_alphabet_is_no_publishable_key(text: str) -> None:
    assert text[28:] not in redact(text).text


def test_a_markers_kind_names_no_vendor_for_a_look_alike_near_it() -> None:
    # redacting again: "[redacted:adafruit_key]" beside "dashboard" is no vendor's complaint
    cid = "bafybeiytk655szcg5ulb7lorxhvawwyhvvvtjlbe5uogaxn2qvqbeqxeyq"
    key = "aio_oJw9r7QgePaSa4KcwmjcB4dmjL8r"
    text = f"ipfs://{cid}\nthe feed dashboard reads with {key} until Friday"
    out = redact(text).text
    assert cid in out and "aio_oJw9r7" not in out

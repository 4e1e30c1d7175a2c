"""Secrets whose layout hid them from rules that read a line at a time: a token wrapped
onto the next line, a YAML block scalar, base64 piped to ``base64 -d``, a bare seed
phrase, a Solana keypair's bytes and a WordPress salt that starts as a placeholder does;
and the look-alikes of each (each case written for its rule)."""

from __future__ import annotations

import random

import pytest

from kenning.redact import redact


def _gone(text: str, *secrets: str) -> str:
    out = redact(text).text
    for secret in secrets:
        assert secret not in out, out
    return out


def _left(text: str) -> None:
    assert redact(text).text == text


# --- a token wrapped onto the next line -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "halves"),
    [
        # the terminal wrapped it: a prefix too short to be its format, then the rest
        ("wrapped:\nghp_Qm7dLx2vKp9sTr4\nwYz6bNc8hJf3gHq1eAa5u\n", ("ghp_Qm7dLx", "wYz6bNc8hJf3")),
        (
            "TOKEN=xoxb-240583172946-71059382614\n83-kPzQvWmRt2Lx9NbYc4HsJdFe\n",
            ("xoxb-2405", "83-kPzQvWmRt2"),
        ),
        ("key id:\nAKIAQ7RZX4KD\n2MWP9LTB\n", ("AKIAQ7RZ", "2MWP9LTB")),
        # a shell command continued with "\" (the next line indented)
        (
            "aws configure set aws_access_key_id AKIAQ7RZX4KD2MW\\\n  P9LTB",
            ("AKIAQ7RZ", "P9LTB"),
        ),
        (
            'curl -H "Authorization: token ghp_Qm7dLx2vKp9sTr4wYz6\\\n'
            '    bNc8hJf3gHq1eAa5u" https://api.github.com/user',
            ("ghp_Qm7dLx", "bNc8hJf3gHq1eAa5u"),
        ),
        (
            "export OPENAI_API_KEY=sk-proj-Rk4nWq8ZtLm2Vx7Pd3Hs9Jc6Fb1Y\\\nGt5Ka8Qe2NwT3BlbkFJ\n",
            ("sk-proj-Rk4n", "Gt5Ka8Qe2NwT3BlbkFJ"),
        ),
        # a long value after a secret's name, hex or base64
        (
            "SECRET_KEY=4e1f9a7c3b8d2e6f0a5c9b3d\n7f2e8a1c6d4b9e3f\n",
            ("4e1f9a7c", "7f2e8a1c6d4b9e3f"),
        ),
        (
            "aws_secret_access_key = Wq9rLt2XnBv7Kd4Pm/Hs8Jc3Zf\nYa6Ue1Ng5Rt0Lp\n",
            ("Wq9rLt2X", "Ya6Ue1Ng5Rt0Lp"),
        ),
    ],
)
def test_a_token_wrapped_onto_the_next_line_goes_whole(text: str, halves: tuple[str, ...]) -> None:
    _gone(text, *halves)


_GHP = "ghp_Qm7dLx2vKp9sTr4wYz6bNc8hJf3gHq1eAa5u"


@pytest.mark.parametrize(
    "text",
    [
        # words after the tail on its line
        "run with token " + _GHP[:25] + "\n" + _GHP[25:] + " and then push\n",
        # the tail indented with no shell's "\\"
        "token " + _GHP[:22] + "\n    " + _GHP[22:] + "\n",
        "export GH_TOKEN=" + _GHP[:22] + "\n  " + _GHP[22:] + " && gh auth status\n",
        # over three lines of 14 characters
        "wrapped:\n" + "\n".join(_GHP[i : i + 14] for i in range(0, 40, 14)) + "\n",
    ],
)
def test_a_wrapped_token_goes_whole_whatever_follows_its_tail(text: str) -> None:
    out = _gone(text, _GHP[:10])
    for i in range(4, len(_GHP) - 4):
        assert _GHP[i : i + 5] not in out, out


def test_an_indented_line_after_a_token_prefix_that_completes_no_token_stays() -> None:
    _left("see ghp_prefixes_are\n    Qm7dLx2vKp9sTr4wYz and more\n")
    _left("the ghp_ tokens\n    ghp_abc\n")


@pytest.mark.parametrize(
    "text",
    [
        # what follows a whole token on the next line: prose, a setting, a region, a version
        "TOKEN=ghp_Qm7dLx2vKp9sTr4wYz6bNc8hJf3gHq1eAa5u\nthanks for the help\n",
        "TOKEN=ghp_Qm7dLx2vKp9sTr4wYz6bNc8hJf3gHq1eAa5u\nDEBUG=true\n",
        "API_KEY=Rk4nWq8ZtLm2Vx7Pd3Hs9Jc6\nus-east-1\n",
        "API_KEY=Rk4nWq8ZtLm2Vx7Pd3Hs9Jc6\nv2.14.1\n",
        "API_KEY=Rk4nWq8ZtLm2Vx7Pd3Hs9Jc6\nDone\n",
        "API_KEY=Rk4nWq8ZtLm2Vx7Pd3Hs9Jc6\n1234567890\n",
        # a checksum line after a whole token: the format could run on, but the token ends
        "export GITHUB_TOKEN=gho_LWZCd7bTm19IVp53dwoYzg9YBeBkbFsDdy8X\n"
        "sha256:d0b352ad6074dce1118813830d71939b53182e4e349d98729e7c6be9ff907a76  app.tar.gz\n",
        # a path alone on the next line (found by the hypothesis corpus test): the next
        # command, or its output, never the rest of a token
        "export GITHUB_TOKEN=gho_LWZCd7bTm19IVp53dwoYzg9YBeBkbFsDdy8X\n/usr/bin/python3\n",
        "export GITHUB_TOKEN=gho_LWZCd7bTm19IVp53dwoYzg9YBeBkbFsDdy8X\n"
        "/nix/store/i5sr976b4al2kaxbp11by85pf99p0ikq-python3-3.11.9/bin/python3\n",
        "API_KEY=Rk4nWq8ZtLm2Vx7Pd3Hs9Jc6\n./node_modules/.bin/tsc\n",
    ],
)
def test_the_line_after_a_whole_token_stays(text: str) -> None:
    out = redact(text).text
    assert out.split("\n", 1)[1] == text.split("\n", 1)[1], out


@pytest.mark.parametrize(
    "text",
    [
        "the configuration\nfile is read first\n",
        "import something_long\nimport other_module\n",
        "sk-learn-something\nelse\n",
        "see ghp_prefixes\ndocumented here\n",
    ],
)
def test_lines_that_end_in_words_are_no_wrapped_token(text: str) -> None:
    _left(text)


# --- YAML block scalars ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        (
            "app:\n  signing_secret: |\n    Jx4bQ8nTr2LmVw6Kd9Pz3Hs7Fc1Ya5Ue0Ng8Rt2Lp6Wq4Xm\n"
            "    Zk3Vb7Nc1Hd5Jf9Lg2Ms6Pq0Rt4Vx8Wz3Yb7Ac1Ed5Fh9Gj\n    +Mk2Np6Qr0St4Uv8=\n"
            "  debug: false\n",
            ("Jx4bQ8nTr2", "Zk3Vb7Nc1Hd5", "+Mk2Np6Qr0St4Uv8="),
        ),
        ("db:\n  password: >-\n    Xq7#Lp2Tz9\n  host: db.internal\n", ("Xq7#Lp2Tz9",)),
        ("- name: api\n  api_token: |-\n      3f9c8a7b6d5e4f3a2b1c0d9e8f7a6b5c\n", ("3f9c8a7b",)),
    ],
)
def test_a_yaml_block_under_a_secrets_name_goes(text: str, secrets: tuple[str, ...]) -> None:
    out = _gone(text, *secrets)
    assert "debug: false" in out or "host" in out or "- name: api" in out


@pytest.mark.parametrize(
    "text",
    [
        # a block of prose under a secret's name, a block under another name
        "secret_description: |\n  The token the CI uses.\n  Rotate it yearly.\n",
        "script: |\n  Rk4nWq8ZtLm2Vx7Pd3Hs9Jc6\n",
        # Ansible's vault, a template, a certificate
        "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  61336231643962373730\n",
        "password: |\n  {{ vault_db_password }}\n",
        "ca_cert: |\n  MIIBszCCAVmgAwIBAgIUQm7dLx2vKp9sTr4wYz6bNc8hJf3g\n",
    ],
)
def test_blocks_of_prose_templates_and_other_names_stay(text: str) -> None:
    _left(text)


# --- base64 piped to base64 -d --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # user:password, decoded by the command it is piped to
        "echo bWFyaWFfbG9wZXo6SzdyIXZlUTI= | base64 -d",
        "echo -n 'bWFyaWFfbG9wZXo6SzdyIXZlUTI=' | base64 --decode",
        "base64 -D <<< bWFyaWFfbG9wZXo6SzdyIXZlUTI=",
        # text that holds a secret: DB_PASSWORD=Hunter2Xq9z!
        "echo REJfUEFTU1dPUkQ9SHVudGVyMlhxOXoh | base64 -d",
    ],
)
def test_base64_of_a_credential_piped_to_base64_d_goes(text: str) -> None:
    out = redact(text).text
    assert "[redacted:" in out and "base64" in out, out


@pytest.mark.parametrize(
    "text",
    [
        'echo eyJhbGciOiJub25lIn0= | base64 -d   # {"alg":"none"}',
        "echo aGVsbG8gd29ybGQ= | base64 -d",
        "echo SGVsbG8sIGhvdyBhcmUgeW91Pw== | base64 --decode",
    ],
)
def test_base64_of_ordinary_text_piped_to_base64_d_stays(text: str) -> None:
    _left(text)


def test_basic_auth_in_a_header_still_goes() -> None:
    _gone('curl -H "Authorization: Basic bWFyaWFfbG9wZXo6SzdyIXZlUTI=" x', "bWFyaWFfbG9wZXo6")


# --- a bare seed phrase ---------------------------------------------------------------

_PHRASE12 = "ripple valley ostrich lumber cactus feature humble garlic voyage tunnel absorb erosion"


@pytest.mark.parametrize(
    "text",
    [
        _PHRASE12 + "\n",
        'restore("' + _PHRASE12 + '")',
        "here you go:\n" + _PHRASE12 + " vendor mirror shield\n",  # 15 words
    ],
)
def test_a_bare_seed_phrase_of_a_wallets_length_goes(text: str) -> None:
    _gone(text, "ostrich lumber cactus")


@pytest.mark.parametrize(
    "text",
    [
        # eleven, thirteen: a list of words, not a phrase
        " ".join(_PHRASE12.split()[:11]) + "\n",
        _PHRASE12 + " vendor\n",
        # English, however plain
        "we will add more about this in the next release and there is no date yet\n",
        "you can also cancel any order that has not been sent to the client yet\n",
    ],
)
def test_words_of_the_list_that_are_no_phrase_stay(text: str) -> None:
    _left(text)


# --- a seed phrase written as a list ------------------------------------------------------

_PHRASE24 = (
    _PHRASE12 + " vendor mirror shield stock kite common bundle inch cabbage slam bonus blind"
)


def _grid(words: list[str], columns: int, numbered: str = "{n} ") -> str:
    rows = len(words) // columns
    return "\n".join(
        "   ".join(
            numbered.format(n=r * columns + c + 1) + words[r * columns + c] for c in range(columns)
        )
        for r in range(rows)
    )


def _by_column(words: list[str], columns: int) -> str:
    rows = len(words) // columns
    return "\n".join(
        "  ".join(f"{c * rows + r + 1:>2}) {words[c * rows + r]}" for c in range(columns))
        for r in range(rows)
    )


@pytest.mark.parametrize(
    "text",
    [
        "Ledger seed phrase: " + ", ".join(_PHRASE12.split()),
        ", ".join(_PHRASE24.split()) + "\n",
        "Seed phrase:\n" + "\n".join(_PHRASE24.split()) + "\n",
        "\n".join(_PHRASE12.split()),
        _grid(_PHRASE24.split(), 4),  # "1 stock   2 cat", no heading
        "Secret Recovery Phrase:\n" + _grid(_PHRASE24.split(), 3),
        _grid(_PHRASE12.split(), 3, "{n}. "),
        _by_column(_PHRASE24.split(), 4),  # numbered down the columns
        "  ".join(f"({i}) {w}" for i, w in enumerate(_PHRASE12.split(), 1)),
        "wallet words;\n" + ";\n".join(_PHRASE12.split()[:11] + ["vendor", "mirror"]),  # 13
        "-".join(_PHRASE12.split()) + "\n",  # joined by hyphens, as some wallets show it
    ],
)
def test_a_seed_phrase_listed_word_by_word_goes(text: str) -> None:
    _gone(text, "ostrich", "lumber", "cactus", "erosion")


@pytest.mark.parametrize(
    "text",
    [
        # a list of the list's words at no phrase's length, with no word naming a phrase
        "\n".join(_PHRASE12.split()[:11]) + "\n",
        ", ".join(_PHRASE12.split() + ["vendor"]) + "\n",
        # numbered, but not 1 to 12
        "\n".join(f"{i}. {w}" for i, w in enumerate(_PHRASE12.split(), 2)) + "\n",
        # columns of words that are not all the list's
        "alpha   beta    gamma   delta\nbravo   charlie   golf   hotel\n"
        "india   kilo   lima   oscar\n",
        # ordinary lists
        "apples, pears, plums, figs, dates, limes, kiwis, grapes, melons, mangos, nuts, oats\n",
        # a hyphenated slug of the list's words at no phrase's length
        "see /blog/" + "-".join(_PHRASE12.split()[:10]) + "/\n",
        "import os\nimport sys\nfrom pathlib import Path\n\nfor item in items:\n    print(item)\n",
    ],
)
def test_a_list_of_words_that_is_no_phrase_stays(text: str) -> None:
    _left(text)


# --- a Solana keypair's bytes ---------------------------------------------------------


def _keypair(seed: int) -> str:
    numbers = random.Random(seed).choices(range(256), k=64)
    return "[" + ",".join(map(str, numbers)) + "]"


def test_a_solana_keypairs_bytes_go() -> None:
    array = _keypair(1)
    assert redact("$ cat ~/.config/solana/id.json\n" + array).text.endswith(
        "[redacted:private_key]"
    )
    assert array not in redact(f"Keypair.fromSecretKey(Uint8Array.from({array}))").text
    spaced = array.replace(",", ", ")
    assert spaced not in redact(f"secret = {spaced}").text


@pytest.mark.parametrize(
    "text",
    [
        "table = [" + ", ".join(str(i) for i in range(64)) + "]",  # in order
        "pad = [" + ", ".join(str(i % 8) for i in range(64)) + "]",  # few values
        "[" + ",".join(str(i) for i in random.Random(2).choices(range(256), k=63)) + "]",  # 63
        "[" + ",".join(str(i) for i in random.Random(3).choices(range(999), k=64)) + "]",  # > 255
    ],
)
def test_arrays_of_numbers_that_are_no_keypair_stay(text: str) -> None:
    _left(text)


# --- WordPress salts ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "{A+Yr2?<9ifg[5qTIUa}<-Wd-5g~A=~hyVTsZu/+y_]GP,#8HlO1-5_^7h;XYT+J",
        "<9ifg[5qTIUa}<-Wd-5g~A=~hyVTsZu/+y_]GP,#8HlO1-5_^7h;XYT+J{A+YrO?",
        "Ab3 x{Yz+Q9 ;w ]Pz7>Lm2 Kd%4 Rt8(Ns1 Hu6!Wq0 Ec5#Jv3 Zx",
    ],
)
def test_a_wordpress_salt_that_starts_as_a_placeholder_does_goes(value: str) -> None:
    _gone(f"define( 'AUTH_KEY', '{value}' );", value)
    _gone(f"define('NONCE_SALT', '{value}');", value)


@pytest.mark.parametrize(
    "text",
    [
        "define('AUTH_KEY', 'put your unique phrase here');",
        "define('AUTH_KEY', '<put your unique phrase here>');",
        "define('WP_CACHE_KEY_SALT', 'example.com');",
    ],
)
def test_wordpress_placeholders_stay(text: str) -> None:
    _left(text)

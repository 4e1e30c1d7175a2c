"""The general rules behind blind8's findings (tests/fixtures/secrets_blind8): each test
holds one rule on values and contexts other than the corpus's own."""

from __future__ import annotations

import pytest

from kenning.redact import redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("SECRET_KEY=ab7)+0fg-k&2r(y+fvnu*5cs379h5", "ab7)+0fg-k&2r(y+fvnu*5cs379h5"),
        ("    DJANGO_SECRET_KEY=q)w9-k&2r(y+zzt*5cs3!9h5(syu", "q)w9-k&2r(y+zzt*5cs3!9h5(syu"),
    ],
)
def test_a_bracket_that_closes_nothing_inside_a_bare_value_is_part_of_it(
    text: str, secret: str
) -> None:
    assert secret[-12:] not in redact(text).text


@pytest.mark.parametrize(
    "text",
    ["f(SECRET_KEY=abc)+1", "run(password=pw).wait()", "call(token=tok) + other(x)"],
)
def test_a_bracket_that_closes_a_call_still_ends_the_value(text: str) -> None:
    out = redact(text).text
    assert out.endswith(text[text.index(")") :])


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("| Host | Login | Password / token |", "Lantern42Bridge!"),
        ("| Host | Token or key |", "Zq8vN3kR5tW1yX7b"),
        ("| Server | Password (plain) |", "Copper93Falcon!"),
    ],
)
def test_a_markdown_column_whose_header_joins_secret_names_is_redacted(
    header: str, value: str
) -> None:
    cells = header.count("|") - 1
    rule = "|" + "---|" * cells
    row = "| " + " | ".join(["db-07"] * (cells - 1) + [value]) + " |"
    out = redact(f"{header}\n{rule}\n{row}\n").text
    assert value not in out
    assert "db-07" in out


def test_a_markdown_column_whose_header_joins_a_secret_with_something_else_stays() -> None:
    text = "| Host | User / role |\n|---|---|\n| db-07 | Adm1nistr4tor9 |\n"
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("RevenueCatApiKey", "9c1d4e7f2a6b8d0e3f5a7c9b1d2e4f60"),
        ("BackendSecret", "Qm7vT2xK9pL4sR8w"),
        ("AnalyticsToken", "tk81Fz0QwErT5yUi3oPa"),
    ],
)
def test_a_plist_string_under_a_key_that_names_a_secret_is_redacted(key: str, value: str) -> None:
    text = f"<dict>\n\t<key>{key}</key>\n\t<string>{value}</string>\n</dict>\n"
    out = redact(text).text
    assert value not in out
    assert f"<key>{key}</key>" in out


@pytest.mark.parametrize(
    ("key", "value"),
    [("ApiKey", "$(API_KEY)"), ("CFBundleIdentifier", "com.example.a1b2c3d4e5f6"), ("ApiKey", "")],
)
def test_a_plist_string_that_is_a_reference_or_not_named_as_a_secret_stays(
    key: str, value: str
) -> None:
    text = f"<dict>\n\t<key>{key}</key>\n\t<string>{value}</string>\n</dict>\n"
    assert redact(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        r"C:\Users\amara\AppData\Roaming\Microsoft\Credentials\5D2C1E0F9A8B7C6D5E4F3A2B1C0D9E8F",
        r"dir C:\ProgramData\Vendor\Secrets\0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        r'"path": "C:\\Users\\amara\\Tokens\\9f8e7d6c5b4a39281706f5e4d3c2b1a0"',
    ],
)
def test_a_windows_path_component_after_a_secret_word_is_a_file_name(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        "spring.datasource.password=ENC(Xk3mP9qL2vR8tN5wY7zA1bC4dE6fG0hJ+Kl/Mn==)",
        "app:\n  api-key: ENC(q8Zr2LmN4pQs6TuV8wXy0AbCdEfGhIjKlMnOp)\n",
    ],
)
def test_a_jasypt_encrypted_value_is_ciphertext_not_a_secret(text: str) -> None:
    assert redact(text).text == text


def test_a_plain_secret_beside_a_jasypt_value_still_goes() -> None:
    text = "db.password=ENC(Xk3mP9qL2vR8tN5wY7zA1bC4dE6fG0hJ)\nmail.password=Harbor93Lantern!\n"
    out = redact(text).text
    assert "ENC(Xk3mP9qL2vR8tN5wY7zA1bC4dE6fG0hJ)" in out
    assert "Harbor93Lantern!" not in out


_SEALED = (
    "apiVersion: bitnami.com/v1alpha1\nkind: SealedSecret\nmetadata:\n  name: api\n"
    "spec:\n  encryptedData:\n    api_token: {blob}\n    password: {blob}\n"
    "  template:\n    metadata:\n      name: api\n"
)


def test_a_sealed_secrets_encrypted_data_is_ciphertext_not_a_secret() -> None:
    blob = "AgB" + "x9Kq2Lm7Np4Rs8Tv1Wz5Yb3Cd6Fg0Hj+Kl/Mn" * 8 + "=="
    text = _SEALED.format(blob=blob)
    assert redact(text).text == text


def test_a_plain_secret_after_a_sealed_secret_still_goes() -> None:
    blob = "AgB" + "x9Kq2Lm7Np4Rs8Tv1Wz5Yb3Cd6Fg0Hj+Kl/Mn" * 8 + "=="
    text = (
        _SEALED.format(blob=blob) + "---\nkind: Secret\nstringData:\n  password: Harbor93Lantern!\n"
    )
    out = redact(text).text
    assert blob in out
    assert "Harbor93Lantern!" not in out


_B64_DIGEST = (
    "Qm9yZWFsK3g5TGw3TnA0UnM4VHYxV3o1WWIzQ2Q2RmcwSGorS2wvTW4yUHE0"
    "UnM2VHY4V3gwWXoxQWIzQ2Q1RWY3R2g5SWow=="
)


@pytest.mark.parametrize(
    "name", ['"contentHash"', '"integrity"', "checksum", "artifact_sha512", '"digest"']
)
def test_a_value_named_as_a_content_hash_is_no_secret(name: str) -> None:
    text = f'{name}: "{_B64_DIGEST}",'
    assert redact(text).text == text


def test_a_hash_named_as_a_credentials_still_goes() -> None:
    assert _B64_DIGEST not in redact(f'"passwordHash": "{_B64_DIGEST}",').text


@pytest.mark.parametrize(
    "text",
    [
        "Ich finde mein Passwort für srv-07 nicht mehr.",
        "J'ai perdu mon mot de passe pour web-2b hier.",
        "Olvidé la contraseña para app-09 otra vez.",
    ],
)
def test_a_host_after_a_preposition_after_a_password_word_is_what_it_opens(text: str) -> None:
    assert redact(text).text == text


def test_a_password_given_after_is_past_the_host_still_goes() -> None:
    assert "Kx7!mQ2p" not in redact("Das Passwort für srv-07 ist Kx7!mQ2p").text


@pytest.mark.parametrize(
    "text",
    [
        "      API_TOKEN: ${API_TOKEN:?set API_TOKEN in the environment}",
        'psql "${PGPASSWORD?set PGPASSWORD first}" -c "select 1"',
    ],
)
def test_the_message_of_a_parameter_expansion_is_no_value(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "user", "secret"),
    [
        (
            "$ cat /etc/apache2/.htpasswd\nmarta:$apr1$Qz8kLm2p$Xy7vN3kR5tW1yX7bQ9sD0a\n$ ls",
            "marta:",
            "Xy7vN3kR5tW1yX7bQ9sD0a",
        ),
        ("$ cat secrets/pass.txt\ndeploy:Harbor93Lantern!\n", "deploy:", "Harbor93Lantern!"),
    ],
)
def test_the_user_field_of_a_printed_credential_file_stays(
    text: str, user: str, secret: str
) -> None:
    out = redact(text).text
    assert secret not in out
    assert "\n" + user in out


@pytest.mark.parametrize(
    "text", ["hasło do wifi to Kx7!mQ2pZ", "salasana on Kx7!mQ2pZ", "a jelszó van Kx7!mQ2pZ"]
)
def test_a_word_that_says_is_is_no_preposition(text: str) -> None:
    assert "Kx7!mQ2pZ" not in redact(text).text


def test_a_printed_credential_line_whose_secret_alone_reads_as_a_placeholder_goes_whole() -> None:
    text = "$ cat /etc/nginx/.htpasswd\nadmin:{SHA}Vq3xk9ZtR2mPpLw8Yb0cNd4eFg6=\n"
    assert "Vq3xk9ZtR2mPpLw8Yb0cNd4eFg6" not in redact(text).text


_G = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
_A = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9Q3kLm2X8"
_P = "Zq8!vR3#mT6kW9pL"


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        (
            f"kind: SealedSecret\nspec:\n  encryptedData:\n    GITHUB_TOKEN: {_G}\n"
            f"    AWS_SECRET_ACCESS_KEY: {_A}\n",
            [_G, _A],
        ),
        (
            f'kind: SealedSecret\n```\nencryptedData:\n    psql "postgres://admin:{_P}@db/x"\n'
            f'    curl -H "Authorization: token {_G}"\n',
            [_P, _G],
        ),
        (
            '{"kind": "SealedSecret", "spec": {"encryptedData": {"GITHUB_TOKEN": "' + _G + '"}}}',
            [_G],
        ),
    ],
)
def test_only_ciphertext_in_a_sealed_secrets_encrypted_data_is_left(
    text: str, secrets: list[str]
) -> None:
    out = redact(text).text
    for secret in secrets:
        assert secret not in out


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"token: ENC({_G})", _G),
        (f"app.key=ENC({_G})", _G),
        ("password=ENC(AKIAIOSFODNN7EXAMPLQ)", "AKIAIOSFODNN7EXAMPLQ"),
    ],
)
def test_a_vendor_token_inside_jasypt_enc_is_still_a_secret(text: str, secret: str) -> None:
    assert secret not in redact(text).text


def test_jasypt_ciphertext_is_still_left() -> None:
    text = "spring.datasource.password=ENC(Zq8avR3bmT6kW9pLxyzXYZ)"
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"Passwort für {_P}", _P),
        (f"mot de passe pour {_P} merci", _P),
        ("Passwort für Zq8vR3mT6kW9pL", "Zq8vR3mT6kW9pL"),
    ],
)
def test_a_credential_after_a_preposition_is_still_the_password(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize(
    "text",
    ["Ich habe mein Passwort für db-01 vergessen.", "mot de passe pour web-2.example.com"],
)
def test_a_name_after_a_preposition_is_still_left(text: str) -> None:
    assert redact(text).text == text

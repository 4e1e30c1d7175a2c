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


BITWARDEN = (
    "folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,"
    "login_password,login_totp\n"
    "Work,1,login,mail,,,0,https://mail.example.org/,ana@example.org,"
    "quartz-ember-willow-finch,JBSWY3DPEHPK3PXPQ7RTZ2KA\n"
    ",,login,shop,,,0,https://shop.example.com/,ana@example.org,Nova22!!,\n"
)
FIREFOX = (
    '"url","username","password","httpRealm","formActionOrigin","guid","timeCreated",'
    '"timeLastUsed","timePasswordChanged"\n'
    '"https://a.example","ana@example.org","/~Qv-Tz9=k,x",,"https://a.example",'
    '"{0f6c1a9e-3a5b-4c55-9e7a-2b9d0c8e1f00}","1733968401407","1733968410407","1733968401407"\n'
)
KEEPASS = (
    "<Entry>\n\t<String>\n\t\t<Key>Password</Key>\n"
    '\t\t<Value ProtectInMemory="True">tk7%Mb&amp;h^qfJ</Value>\n\t</String>\n'
    "\t<String>\n\t\t<Key>URL</Key>\n\t\t<Value>https://git.example.org</Value>\n"
    "\t</String>\n</Entry>"
)


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        (BITWARDEN, ["quartz-ember-willow-finch", "JBSWY3DPEHPK3PXPQ7RTZ2KA", "Nova22!!"]),
        (FIREFOX, ["/~Qv-Tz9=k,x"]),
        ("name,url,username,password,note\nmail,https://m.example,ana,Bruno18!!,\n", ["Bruno18!!"]),
        (
            "Title,URL,Username,Password,Notes,OTPAuth\n"
            "Mail (ana),https://m.example/,ana@example.org,oyster-paprika-galaxy,,\n",
            ["oyster-paprika-galaxy"],
        ),
        (KEEPASS, ["tk7%Mb&amp;h^qfJ"]),
    ],
)
def test_a_password_managers_export_loses_its_password_and_totp_columns(
    text: str, secrets: list[str]
) -> None:
    out = _gone(text, *secrets)
    for secret in secrets:
        text = text.replace(secret, "[redacted:password]")
    assert out == text  # the names, addresses, URLs and times stay


@pytest.mark.parametrize(
    "text",
    [
        "user,password_hint,created\nana,the cat's name,2024-01-02\n",
        "id,name,password_changed_at\n1,ana,2024-01-02T10:00:00Z\n",
        "username,password\nana,\nbob,changeme\n",
        "<Key>URL</Key><Value>https://example.org</Value>",
        # A key's column in a Markdown table holds names: dotted words are one.
        "| key | default |\n|---|---|\n| `memory.summarize.enabled` | `false` |",
        "| Key | Type |\n| --- | --- |\n| logging.handlers.rotating | str |",
        # "answer" said in passing on a line about a question.
        "There is no question to answer here.",
        "the hook fires for the question, not its answer) for a tool",
    ],
)
def test_columns_and_fields_that_hold_no_password_are_left(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("| password | site |\n|---|---|\n| Orchid.Kestrel.Nimbus7 | bank |", "Orchid.Kestrel"),
        ("Security question: first pet? Answer: Biscuit", "Biscuit"),
        ("security question - the answer is Okafor", "Okafor"),
    ],
)
def test_a_password_column_and_an_answer_given_as_one_still_go(text: str, secret: str) -> None:
    _gone(text, secret)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("spring:\n  datasource:\n    password: quartz.ember.willow\n", "quartz.ember.willow"),
        ("ossrhPassword=ember.willow.finch.Quartz4\n", "ember.willow.finch.Quartz4"),
        ("Server=db;User Id=sa;Password=willow.finch.quartz.ember;Encrypt=True", "willow.finch"),
        ("WIFI:T:WPA;S:Home;P:finch.quartz.ember.willow;;", "finch.quartz.ember.willow"),
        ("Das WLAN-Passwort lautet ember_willow_finch", "ember_willow_finch"),
        ("mi contraseña del banco es willow_quartz_ember, no se la digas", "willow_quartz_ember"),
        ("parola este quartz.finch.ember.willow", "quartz.finch.ember.willow"),
        ("kodeordet til wifi er Qu4s4r8", "Qu4s4r8"),
        ("passordet er Nova86", "Nova86"),
        ("wifi şifresi Nova95!", "Nova95!"),
        ("логін ana, пароль Nova.19!", "Nova.19!"),
        ("пароль от вайфая Zq+7x*Lp?w2", "Zq+7x*Lp?w2"),
        ("Mon mot de passe Gmail c'est Zq#7xLp=w2, ne le partage pas", "Zq#7xLp=w2"),
        ("वाईफाई का पासवर्ड: NovaFinch868", "NovaFinch868"),
        ("पासवर्ड है ember-willow-Quartz0-finch", "ember-willow-Quartz0-finch"),
        ("كلمة سر الواي فاي هي Nova.71!!", "Nova.71!!"),
        ("와이파이 비번 dPTq8F.0?jbuE", "dPTq8F.0?jbuE"),
        ("账号 ana 密码 Zq7~xLp*w2", "Zq7~xLp*w2"),
        ("这是我的API密钥：c084a82bea52a2fd77cc7096324b3a156e688b5c，别外传", "c084a82bea52a2fd"),
        ("pass is Nova67! lol", "Nova67!"),
    ],
)
def test_passphrases_and_chosen_passwords_after_their_name_in_any_language(
    text: str, secret: str
) -> None:
    _gone(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "password = self.config.password",
        "token=request.form.token",
        "the password is in config.yaml.example",
        "the password is stored in vault.corp.example.com",
        "password: max_new_tokens",
        "the password is up-to-date",
        "Das Passwort ist falsch",
        "пароль от вайфая на роутере",
        "wifi şifresi nedir?",
        "pass the python311 build to CI",
    ],
)
def test_names_hosts_and_prose_after_a_passwords_name_are_left(text: str) -> None:
    assert redact(text).text == text


SEED = "legal winner thank year wave sausage worth useful legal winner thank yellow"
GRID = (
    "Recovery phrase:\n1. legal   2. winner   3. thank\n4. year   5. wave   6. sausage\n"
    "7. worth   8. useful   9. legal\n10. winner   11. thank   12. yellow\n"
)


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("try my card 4111 1111 1111 1111 exp 09/29 cvc 123", ["4111 1111 1111 1111"]),
        ('card={"number": "5555555555554444", "exp_month": 4, "cvc": "311"}', ["5555555555554444"]),
        ("Amex 378282246310005, expires 11/27", ["378282246310005"]),
        ("the PIN for the debit card is 4821, don't tell", ["4821"]),
        ("SIM PIN 7391, PUK 52816390", ["7391", "52816390"]),
        ("Geheimzahl der Karte: 6604", ["6604"]),
        ("il PIN del bancomat è 2290", ["2290"]),
        ("de pincode is 918273", ["918273"]),
        ("暗証番号は583920です", ["583920"]),
        ("phone unlock code is 662019 if you need it", ["662019"]),
        (
            "security questions: mother's maiden name Okonkwo, first school St Ives Primary",
            ["Okonkwo", "St Ives Primary"],
        ),
        ("Security question: first pet? answer: Biscuit77", ["Biscuit77"]),
        (f"my wallet's recovery phrase is {SEED} - does it derive?", [SEED]),
        (f'ethers.Wallet.fromPhrase("{SEED}")', [SEED]),
        (GRID, ["legal", "winner", "sausage", "yellow"]),
        (
            "BitLocker recovery key:\n123456-234567-345678-456789-567890-678901-789012-890123",
            ["123456-2"],
        ),
        ("Microsoft account recovery code: 4QM6A-TGPNL-AX7CF-SR6BU-VUEH2", ["4QM6A-TGPNL"]),
        ("2FA setup key for the exchange: JBSWY3DPEHPK3PXP (in Aegis)", ["JBSWY3DPEHPK3PXP"]),
        ("TOTP secret:\nKRSXG5CTMVRXEZLU\n", ["KRSXG5CTMVRXEZLU"]),
        ("root:$6$Zq1.abcDEF$0123456789abcdefABCDEF./ghij:19700:0:99999:7:::", ["$6$Zq1.abc"]),
        (
            "traefik.http.middlewares.a.basicauth.users=admin:$$apr1$$Hx1/aBc9$$kt.mfB1erjnnEbrDMJo",
            ["kt.mfB1erjnnEbrDMJo"],
        ),
        (
            "BACKUP VERIFICATION CODES\nana@example.org\n\n4238 1724\n0115 4997\n9610 5829\n",
            ["4238 1724", "9610 5829"],
        ),
        ("Your backup codes:\n* rxnm-nyez\n* 23e9-4asw\n* 63m8-9e5y\n* jlp4-4ta6\n", ["rxnm-nyez"]),
    ],
)
def test_cards_pins_answers_seed_phrases_recovery_codes_setup_keys_and_hashes(
    text: str, secrets: list[str]
) -> None:
    _gone(text, *secrets)


@pytest.mark.parametrize(
    "text",
    [
        "order 4111 1111 1111 1111 shipped",  # a card number alone: no expiry, no code
        "Visa ending in 1234, exp 09/29",
        "tracking 1Z999AA10123456784, expected 09/12",
        "connect the LED to GPIO pin 13",
        "PIN changed in 2024",
        "the PIN has 4 digits",
        "security question: what was your first pet?",
        "we never use the legal winner thank you note again for this year",
        "1. Install\n2. Configure\n3. Run\n",
        "recovery key is stored in the vault",
        "build 123456-234567 done",
        "price is $5 and $6 total",
        "Your backup codes:\n* keep them safe\n* print them\n* do not share\n",
    ],
)
def test_what_reads_like_a_card_pin_answer_phrase_or_code_but_gives_none(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("$ heroku auth:token\n5f1e2d3c-4b5a-4987-8c6d-5e4f3a2b1c0d\n", "5f1e2d3c-4b5a"),
        ("$ security find-generic-password -s gh -w\nq%r_*T=I~~T8F.En?Tuo\n$ ", "q%r_*T=I~~T8F"),
        ("$ pass show mail/example.org\nfinch.quartz.ember\nuser: ana\n", "finch.quartz.ember"),
        ("$ secret-tool lookup service nextcloud user ana\nP3Kzd.O4UB4R#p*\n", "P3Kzd.O4UB4R#p*"),
        ("$ cat config/master.key\n0f4c2a7d9e1b3c5a7f9e2d4c6b8a0e1f\n", "0f4c2a7d9e1b3c5a"),
        (
            "$ cat ~/.ansible/vault_pass.txt\nKY!RW.43c*H_M%4_bkDP\n$ ansible-playbook x.yml\n",
            "KY!RW.43c",
        ),
        ("$ cat /etc/openvpn/auth.txt\nana@example.org\nbiscuit52951\n", "biscuit52951"),
        ("Password for the elastic user (reset with `x`):\n  PWaCCcf6urmFI0uSdR8m\n", "PWaCCcf6ur"),
        ("Username\nana@example.org\nPassword\np*sIL=-b.b?qW?m6d3*2\nCreated: today\n", "p*sIL="),
        ('$ dotnet user-secrets set "Smtp:Password" "L4nt3rn%63"', "L4nt3rn%63"),
        (
            "Successfully saved Smtp:Password = Tangerine1995* to the secret store.",
            "Tangerine1995*",
        ),
        ("ssh-keygen -t ed25519 -N 'walrus.paprika.Walrus9' -f ~/.ssh/id_work", "walrus.paprika"),
        ("cmdkey /add:fs /user:CORP\\ana /pass:Rocky.99!", "Rocky.99!"),
        ("geth account unlock 0xabc --password <(echo Felix15)", "Felix15"),
        ('nmcli dev wifi connect "Home" password "Ct8=ATDEglgrb5E9+R"', "Ct8=ATDEglgrb5E9+R"),
        (
            "api.openweathermap.org/data/2.5/weather?q=Lyon&appid=d22f1db4c39b1560d8cdddcdb3db0464",
            "d22f1db4",
        ),
        ("snmp-server community YJB3WMdg4Nrh RO", "YJB3WMdg4Nrh"),
        ("username admin privilege 15 password 7 844718190260B5349C8F08", "844718190260B5349C8F08"),
        ("Haruto*2017walr is the password for the admin panel", "Haruto*2017walr"),
        ("Lantern1966# ← that's the root password", "Lantern1966#"),
        ("copenhagen92405 (wifi)", "copenhagen92405"),
        ("fatima75 : X%-3mPBAV5afPk0fD_ on 192.168.0.109", "X%-3mPBAV5afPk0fD_"),
        ('accounts: ["0x' + "ab12" * 16 + '"],  // hardhat', "ab12ab12ab12"),
        ("ok I regenerated it, new one: 7533131c7e68d14bc4841da9aac71435ca91d411", "7533131c7e"),
        ("guests use network Livebox-3A1F, the key is walrus.kangaroo.galaxy", "walrus.kangaroo"),
        ("klucz API: 9d3e34f49c96fa6004976fa643b65615795cc1c2 (nie udostępniaj)", "9d3e34f49c96"),
    ],
)
def test_what_a_command_prints_and_commands_that_take_a_password(text: str, secret: str) -> None:
    _gone(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "$ heroku auth:token | pbcopy\n$ echo done\n",
        "$ cat ~/.ssh/id_ed25519.pub\n"
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ana\n",
        "$ cat /etc/openvpn/auth.txt\nana@example.org\n",
        "Password:\n********\n",
        "Enter your password:\nLogin successful, welcome back\n",
        "snmp-server community public RO",
        "the password is 7 characters long",
        "this is the password field for the admin panel",
        "see README (wifi)",
        "status : failed on 10.0.0.1",
        "accounts: [deployer, admin]",
        "we rotated the logo, new one: logo-v2.svg",
    ],
)
def test_commands_labels_and_prose_that_print_or_give_no_secret(text: str) -> None:
    assert redact(text).text == text


# Ordinary text that the rules above once changed: Python and C sources, their docs and
# changelogs (each case written here for the rule it tests).
@pytest.mark.parametrize(
    "text",
    [
        # "answer" on a line about questions that are no security question's
        "# The questions put to the client last time: an answer is accepted only once.",
        "Every question goes out once - its answer is kept in `state` between calls",
        # ... or before the question it is the answer to: code that asks one
        "const answer = await prompt.question('Which port should it listen on? ');",
        "const answer = await rl.question('What is your favorite colour? ');",
        # a line about a first school, above a long line (over 400 characters) that
        # mentions a question: the question's line is read, not the text before it
        "Our first school trip went to Lyon.\n"
        + "The notes below are long, " * 18
        + "and one question is left open.",
    ],
)
def test_an_answer_on_a_line_about_questions_that_are_not_security_questions_is_left(
    text: str,
) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Secret question: the name of my first street? answer: Okafor Lane", "Okafor Lane"),
        ("Secret question (mother's maiden name), answer: Okonkwo", "Okonkwo"),
    ],
)
def test_an_answer_after_a_security_question_on_its_line_still_goes(text: str, secret: str) -> None:
    _gone(text, secret)


@pytest.mark.parametrize(
    "text",
    [
        # a list of names goes on to the next line: no header of a table
        'STRING_ARGS = (\n    "text", "password", "label", "prefix",\n'
        '    "pattern", "topic", "reason", "note",\n)',
        "the lookup covers the group, passwd, hosts, services,\n"
        "shadow, netgroup, and alias databases.",
        # clauses of prose, not a header's names
        "  but if you run a lint pass, it finds nothing, and then\n"
        "  no problem, it reports nothing more, and it stops",
        # a line of more cells than the "header" above it is none of its rows
        "\tadd CC_FOR_BUILD, AR_FOR_BUILD, LD_FOR_BUILD.  Pass\n"
        "\tBUILD_FLAGS, which sets CC, AR, LD and NM, to each subdir.",
        # a call's arguments: a name's brackets close what they open ("Email (work)")
        "    base.set_login(None, host, user, passwd)\nbase.set_login(realm, host, user, passwd)",
    ],
)
def test_lists_of_names_and_prose_with_commas_are_no_password_managers_export(
    text: str,
) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # a pasted row cut short after its password is still a row
        ("name,url,username,password,note\nmail,https://m.example,ana,Bruno18!!\n", "Bruno18!!"),
        (
            '"Group","Title","Username","Password","Last Modified"\n'
            '"Root","mail","ana","oyster.paprika.Galaxy4","2026-11-03"\n',
            "oyster.paprika.Galaxy4",
        ),
    ],
)
def test_an_exports_password_column_still_goes(text: str, secret: str) -> None:
    _gone(text, secret)


def test_a_file_named_passwd_in_a_path_names_no_password() -> None:
    text = "awk -F: </etc/passwd '$7 ~ /bash/ {print $1}'"
    assert redact(text).text == text
    _gone("nmcli con modify home wifi-sec.psk password 'Ct8=AT/Degl'", "Ct8=AT/Degl")


def test_another_settings_name_after_a_slash_is_no_value() -> None:
    # prose that lists two settings as "A=/B=" (a man page's, say)
    for text in (
        "the folder is filled by LoadCredential=/SetCredential=. It is read-only.",
        "by ImportCredential=/LoadCredential= (see the manual).",
    ):
        assert redact(text).text == text
    _gone("SESSION_SECRET=/Qv7Xk9Lp2Tz4=", "Qv7Xk9Lp2Tz4")
    _gone("DB_PASSWORD=/SetHunter2Now=", "SetHunter2Now")


def test_a_keys_word_inside_another_word_names_no_key() -> None:
    # Russian "отключить" (switch off) holds "ключ" (key); the text JSON-escaped
    text = "перезапуск может отключить ваши сессии X11.\\n\\nЭтот сценарий"
    assert redact(text).text == text
    _gone("ключ от сервера Xq7#Lp2Tz9", "Xq7#Lp2Tz9")
    _gone("de API-sleutel is Xq7#Lp2Tz9", "Xq7#Lp2Tz9")


@pytest.mark.parametrize(
    "text",
    [
        "a chave pública fica em id_ed25519.pub",
        "la chiave è in id_rsa4096.pem",
        "ключ лежит в id_ed25519.pub",
        "de sleutel staat in backup2024.gpg",
    ],
)
def test_a_file_that_holds_a_key_is_not_the_key(text: str) -> None:
    assert redact(text).text == text


def test_a_key_given_after_its_name_in_those_languages_still_goes() -> None:
    _gone("a chave da API é Xq7#Lp2Tz9", "Xq7#Lp2Tz9")
    _gone("la chiave del server è Xq7#Lp2Tz9", "Xq7#Lp2Tz9")


@pytest.mark.parametrize(
    "text",
    [
        # a database's key named by its kind, in the languages whose word for a key the
        # rules read: never a secret, whatever follows
        "klucz główny to id_42",
        "klucz obcy: order_id3",
        "la clé primaire est id_42",
        "clé étrangère : customer_id2",
        "der Primärschlüssel ist id_42",
        "la chiave primaria è id_42",
        "la clave primaria es id_42",
        "a chave primária é id_42",
        "de primaire sleutel is id_42",
        "främmande nyckel är id_42",
        "первичный ключ: id_42",
        # a column's name after a key's word is an identifier, not a key
        "klucz to id_42",
        "la clé est user_id2",
    ],
)
def test_a_databases_key_and_a_columns_name_after_a_keys_word_are_left(text: str) -> None:
    assert redact(text).text == text


def test_a_key_or_wifi_password_after_a_keys_word_still_goes() -> None:
    _gone("klucz: kot_w_butach7", "kot_w_butach7")
    _gone("la clave del wifi es luna_2024", "luna_2024")
    _gone("WLAN-Schlüssel: haus_42", "haus_42")
    _gone("la clé API est Xq7#Lp2Tz9", "Xq7#Lp2Tz9")

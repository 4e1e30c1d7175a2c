"""The redactor on the blind2 corpus (tests/fixtures/secrets_blind2), written before its
author read the redaction code: secrets as people paste them and tools print them, and
look-alikes. Floors a little under the figures reached, so that a regression fails;
`python tests/fixtures/secrets_blind2/score.py --seeds 1-3 --show` prints the misses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import load_module
from kenning.redact import redact

_HERE = Path(__file__).parent / "fixtures" / "secrets_blind2"
scorer = load_module(_HERE / "score.py", "secrets_blind2_score")

# Seeds 1-3: blind, on main at 005187d, removed 83.3%, unchanged 98.2% (98.6% once the
# corpus's public JWKs were given base64url); after the fixes 99.7% and 99.5%.
REMOVED = 0.99
UNCHANGED = 0.99
SEEDS = [1, 2, 3]


def test_the_corpus_has_200_secrets_and_150_look_alikes() -> None:
    cases = scorer.cases(1)
    secrets = [c for c in cases if c.is_secret]
    assert len(secrets) >= 200
    assert len(cases) - len(secrets) >= 150
    assert all(s in c.text for c in secrets for s in c.secrets)
    assert [c.text for c in scorer.cases(1)] == [c.text for c in cases]


def test_the_redactor_removes_the_blind2_secrets_and_keeps_the_look_alikes() -> None:
    sc = scorer.score(SEEDS)
    assert sc.removed_share >= REMOVED, f"removed {sc.removed}/{sc.secrets}"
    assert sc.unchanged_share >= UNCHANGED, f"unchanged {sc.unchanged}/{sc.lookalikes}"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # joined words and a number, a leet word and a year, after a password's name
        ("das Passwort lautet Willow-Canyon-15", "Willow-Canyon-15"),
        ("数据库密码：L4g00n_2010", "L4g00n_2010"),
        ("echo tundra-falcon-588 | sudo -S apt-get update", "tundra-falcon-588"),
        # Wi-Fi in prose
        ("the wifi is HomeNet and the code is hutaxw1na37", "hutaxw1na37"),
        ("wifi: HomeNet / osrx9jv2tx1onj", "osrx9jv2tx1onj"),
        ("le code du wifi c'est Rivage-Lune-2024", "Rivage-Lune-2024"),
        ("pass for the guest wifi (Livebox-7F2A) is embersable3938, thanks", "embersable3938"),
        ("รหัสผ่านคือ lagoonraven9617", "lagoonraven9617"),
        ("รหัส wifi: Sable-Violet-91", "Sable-Violet-91"),
        ("пароль к базе — tundra-comet-453", "tundra-comet-453"),
        ("la parola d'ordine per il server è Kx8mQ2vLp9", "Kx8mQ2vLp9"),
        ("creds: kasia@vpn.example.org raven-cactus-475", "raven-cactus-475"),
        # network gear
        ("sudo iwconfig wlan0 essid Casa_Rossi key s:UErxPEJ1ax0PO", "UErxPEJ1ax0PO"),
        ("config wifi-iface 'r0'\n\toption key 'lagoonvelvet7267'", "lagoonvelvet7267"),
        ("crypto isakmp key die92BGNFZHg address 0.0.0.0 0.0.0.0", "die92BGNFZHg"),
        ("radius-server host 10.0.0.9 key Violet84*", "Violet84*"),
        ("snmpwalk -v2c -c basil-velvet-943 192.168.1.1 system", "basil-velvet-943"),
        ("snmpwalk -v3 -u m -a SHA -A Willow89x -x AES -X ybn76RW04nQj 10.1.1.1", "ybn76RW04nQj"),
        ("rocommunity n0c-watch-77 10.0.0.0/8", "n0c-watch-77"),
        (
            'set system radius-server 10.0.0.5 secret "$9$MpXFg.ygltiPil/ECJ"',
            "$9$MpXFg.ygltiPil/ECJ",
        ),
        ('# Secrets for authentication using CHAP\n"ines" * "Pepper63#" *', "Pepper63#"),
        # commands
        ("vncpasswd -f <<< ntd79PJxt4ak > ~/.vnc/passwd", "ntd79PJxt4ak"),
        ("echo tundrafalcon | vncpasswd -f > ~/.vnc/passwd", "tundrafalcon"),
        ("echo -n Marble43* | cryptsetup luksOpen /dev/sdb1 vault -", "Marble43*"),
        ("htpasswd -nbB ines Falcon96!", "Falcon96!"),
        ("useradd -m -p $(openssl passwd -6 Maple25%) chiara", "Maple25%"),
        (r"net use Z: \\fileserver\team M34d0w!2028 /user:CORP\eva", "M34d0w!2028"),
        ("ipmitool -I lanplus -H 10.0.9.4 -U ADMIN -P Pepper77* chassis status", "Pepper77*"),
    ],
)
def test_what_the_blind2_corpus_found_missing(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize(
    "text",
    [
        "[security]\nadmin_password = $__file{/run/secrets/grafana_admin}",
        '{"user":"alice","password":"[REDACTED]"}',
        "snmpwalk -v2c -c public 192.168.1.1 system",
        "the wifi is HomeNet, the error code is 1045",
        "wifi: HomeNet (open network, no password)",
        "Wi-Fi: Guest / ask at reception",
        "le code postal est 75011 et le code d'erreur 503",
        "กรุณากรอกรหัสไปรษณีย์ 10110",
        "netsh wlan show profile name=HomeNet key=clear",
        "vncserver :1 -geometry 1920x1080 -depth 24",
        "htpasswd -c /etc/nginx/.htpasswd alice",
        "the password is on the sticker; upgrade to ubuntu-22 first",
        "interface ge-0/0/1 unit 0 family inet address 10.0.0.1/30",
        'in this chapter we compare the two tools\nfoo bar "baz qux"',
    ],
)
def test_what_the_blind2_rules_leave_alone(text: str) -> None:
    assert redact(text).text == text

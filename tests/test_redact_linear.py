"""Redaction stays linear in the text on shapes that once made it quadratic: a rule that
searched the start of a line again for each match on it, or skipped lazily over a long
run to what follows (a 60 KB prompt of a YAML FAQ took 18 s, past an agent's hook
timeout). Four times the text may cost at most eight times as much (linear work takes 4x,
quadratic 16x); best of three fresh texts, and a ratio only counts past a tenth of a
second, so that a noisy machine's millisecond does not fail it."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest

from kenning.redact import redact

SHAPES: dict[str, Callable[[int, int], str]] = {
    "yaml flow FAQ": lambda n, s: (
        f"faq{s}: [" + ", ".join(f"{{question: q{i}, answer: a{i}}}" for i in range(n)) + "]"
    )[:n],
    "prose Q&A on one line": lambda n, s: " ".join(
        f"Question {i + s}: what does flag -{i} do? Answer: it enables mode {i}."
        for i in range(n // 40)
    )[:n],
    "question, then answer: x, ...": lambda n, s: (f"question {s} " + "answer: x, " * n)[:n],
    "iwconfig= repeated": lambda n, s: (f"{s} " + "iwconfig=" * n)[:n],
    "BUNDLE_A repeated": lambda n, s: (f"{s} " + "BUNDLE_A" * n)[:n],
    # gh's `secret set NAME ... --body` read the rest of the line from each `secret set`
    "gh secret set repeated": lambda n, s: (f"{s} gh " + "secret   set " * n)[:n],
    # .netrc's chain of pairs read the rest of the run from each login in it
    "netrc: login repeated": lambda n, s: (f"{s} password\n" + " login" * n)[:n],
    "netrc: login  repeated": lambda n, s: (f"{s} password\n" + "login " * n)[:n],
}


def _best(size: int, make: Callable[[int, int], str]) -> float:
    best = float("inf")
    for seed in range(3):
        text = make(size, seed + size)
        start = time.process_time()
        redact(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.timing
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.timeout(120)
def test_four_times_the_text_costs_at_most_eight_times_as_much(shape: str) -> None:
    make = SHAPES[shape]
    small, large = _best(16_000, make), _best(64_000, make)
    assert large < 0.1 or large <= 8 * small, f"16 KB {small:.3f}s, 64 KB {large:.3f}s"


def _html_page(n: int, seed: int) -> str:
    """A web page: markup, a login form, a table, inline style and script."""
    rng = random.Random(seed)
    words = ("account", "settings", "profile", "search", "results", "sign", "in", "help", "team")

    def w(k: int) -> str:
        return " ".join(rng.choice(words) for _ in range(k))

    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{w(3)} | Example</title>\n"
        '<link rel="stylesheet" href="/static/css/main.3f9a1c2e.css">\n'
        "<style>body{margin:0;font:14px/1.4 system-ui}.nav>li{display:inline-block}"
        "@media (max-width:600px){.col{width:100%}}</style>\n</head>\n<body>\n"
    ]
    size = len(parts[0])
    for i in range(n):
        if size >= n:
            break
        part = rng.choice(
            (
                '<nav class="navbar"><ul class="nav">'
                + "".join(
                    f'<li><a class="nav-link" href="/{w(1)}/{i}">{w(2)}</a></li>' for _ in range(5)
                )
                + "</ul></nav>\n",
                f'<div class="card col-md-4" id="card-{i}" data-id="{rng.randrange(10**6)}">\n'
                f'  <h5 class="card-title">{w(3)}</h5><p>{w(12)} &amp; {w(5)} &lt;b&gt;</p>\n'
                f'  <img src="/img/{i}.png" alt="{w(2)}" width="64" height="64"/>\n</div>\n',
                '<form method="post" action="/login">\n'
                '<input type="hidden" name="csrfmiddlewaretoken" value="{{ csrf_token }}">\n'
                '<label for="password">Password</label><input type="password" id="password" '
                'name="password" autocomplete="current-password">\n'
                '<button type="submit" class="btn btn-primary">Sign in</button></form>\n',
                "<table><tr><th>Name</th><th>Joined</th></tr>"
                + "".join(
                    f"<tr><td>{w(2)}</td><td>2024-0{i % 9 + 1}-11</td></tr>" for _ in range(4)
                )
                + "</table>\n",
                f"<!-- section {i} -->\n<section><h2>{w(3)}</h2><p>{w(20)}.</p></section>\n",
                f"<script>document.querySelector('#card-{i}').addEventListener('click',"
                f"function(e){{fetch('/api/v1/items/{i}?x=1&y=2').then(r=>r.json())"
                ".then(d=>{if(d.a<3&&d.b>1)console.log(d)})});</script>\n",
                f'<svg viewBox="0 0 24 24"><path d="M{i % 24} 2L2 7l10 5 10-5-10-5z"/></svg>'
                f'<a href="https://example.com/{w(1)}?utm_source=x&amp;utm_medium=y">{w(2)}</a>\n',
            )
        )
        parts.append(part)
        size += len(part)
    return "".join(parts)[:n]


def _js_bundle(n: int, seed: int) -> str:
    """A minified bundle: webpack's loader, then modules of short names and literals."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$"

    def v() -> str:
        return rng.choice(letters) + (
            rng.choice("abcdefghijk0123456789") if rng.random() < 0.4 else ""
        )

    parts = [
        "!function(e){var t={};function n(r){if(t[r])return t[r].exports;var o=t[r]={i:r,l:!1,"
        "exports:{}};return e[r].call(o.exports,o,o.exports,n),o.l=!0,o.exports}n(n.s=0)}(["
    ]
    size = len(parts[0])
    for i in range(n):
        if size >= n:
            break
        a, b, c, d = v(), v(), v(), v()
        part = rng.choice(
            (
                f'function(e,t,n){{"use strict";var {a}=n({i}),{b}=n.n({a});t.a=function({c}){{'
                f'return {b}()({c}).map(function({d}){{return{{id:{d}.id,name:{d}.name||"",'
                f"value:{d}.v<0?0:{d}.v}}}})}}}},",
                f"function(e,t){{e.exports=function({a},{b}){{for(var {c}=0,{d}={a}.length;"
                f"{c}<{d};{c}++)if({b}({a}[{c}],{c},{a})===!1)break;return {a}}}}},",
                f"function(e,t,n){{const {a}=/^(?:[a-z0-9!#$%&'*+/=?^_`{{|}}~-]+)@[a-z0-9-]+"
                f"(?:\\.[a-z0-9-]+)*$/i,{b}=({c})=>{a}.test(String({c}).toLowerCase());"
                f"t.validate={b}}},",
                f'function(e,t,n){{e.exports={{apiUrl:"https://api.example.com/v2",timeout:3e4,'
                f'headers:{{"Content-Type":"application/json",Accept:"*/*"}},'
                f"retry:{{count:3,delay:{c}=>1e3*2**{c}}}}}}},",
                f'function(e,t,n){{"use strict";var {a}=n({i}),{c}=function(){{return '
                f'{a}.a.createElement("div",{{className:"row "+({d}?"active":"")}},'
                f"`Item ${{{d}}} of ${{{a}.length}}`)}};t.default={c}}},",
                f"function(e,t){{var {a}={{}}.hasOwnProperty;e.exports=function({c}){{return "
                f'null!={c}&&("object"==typeof {c}||"function"==typeof {c})'
                f'&&{a}.call({c},"length")}}}},',
            )
        )
        parts.append(part)
        size += len(part)
    return "".join(parts)[:n]


# Text a hook is pasted whole: 64 KB of it may take half a second at most (a run of "<"
# took 2.2 s, found a "<<<" here-string at each character and read the 200 before it).
PAGES: dict[str, Callable[[int, int], str]] = {
    "< repeated": lambda n, s: (f"{s}" + "<" * n)[:n],
    "<<< with sudo near": lambda n, s: (f"{s} sudo cat " + "<" * n)[:n],
    "HTML page": _html_page,
    "minified JS": _js_bundle,
}


@pytest.mark.timing
@pytest.mark.parametrize("shape", list(PAGES))
@pytest.mark.timeout(120)
def test_64_kb_of_markup_or_code_takes_under_half_a_second(shape: str) -> None:
    make = PAGES[shape]
    small, large = _best(16_000, make), _best(64_000, make)
    assert large < 0.5, f"16 KB {small:.3f}s, 64 KB {large:.3f}s"
    assert large < 0.1 or large <= 8 * small, f"16 KB {small:.3f}s, 64 KB {large:.3f}s"


# What the rewritten rules find is what they found before.


def test_a_security_answer_counts_only_after_the_question_on_its_line() -> None:
    text = "answer: Rex99 then Security question: first pet? answer: Fluffy77, answer: Tom55"
    out = redact(text).text
    assert "Rex99" in out
    assert "Fluffy77" not in out and "Tom55" not in out
    assert redact("question of taste; the answer is blue").text.endswith("the answer is blue")


def test_each_iwconfig_on_a_line_gives_its_key() -> None:
    text = "iwconfig wlan0 key s:Hunter2Wifi iwconfig wlan1 enc 1234-5678-9ABC"
    out = redact(text).text
    assert "Hunter2Wifi" not in out and "1234-5678-9ABC" not in out
    assert "iwconfig wlan0 key" in out and "iwconfig wlan1 enc" in out
    # a key after the command ended (| ; & or a new line) is not iwconfig's
    for text in ("iwconfig wlan0 | grep key s:Hunter2Wifi", "iwconfig wlan0\n key s:Hunter2Wifi"):
        assert "Hunter2Wifi" in redact(text).text


def test_a_bundler_credential_is_found_in_a_longer_name_and_only_with_a_host() -> None:
    for text in (
        "BUNDLE_ENTERPRISE__CONTRIBSYS__COM=cafebabe:deadbeef7",
        "export MY_BUNDLE_GEMS__EXAMPLE__COM='user1:S3cretPassw0rd'",
        "BUNDLE_BUNDLE_GEMS__EXAMPLE__COM: user1:S3cretPassw0rd",
    ):
        assert "[redacted:" in redact(text).text, text
    for text in ("BUNDLE_GEMFILE=Gemfile.lock", "BUNDLE__EXAMPLE=user1:S3cretPassw0rd"):
        assert redact(text).text == text


# bench/redact_redos.py: the fuzzer that looks for more, kept honest cheaply here.


def test_the_fuzzer_flags_a_lazy_skip_and_passes_the_rules_that_replaced_it() -> None:
    import random
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    import redact_redos

    old = re.compile(r"BUNDLE_[A-Z0-9_]*?[A-Z0-9]__[A-Z0-9_]+[\"']?[ \t]*[:=][ \t]*(?P<v>\S{3})")
    units = redact_redos._Walker(old, random.Random(1)).units()
    assert "BUNDLE_A" in units

    def on_old(text: str, repeat: int) -> float:
        return redact_redos._pattern_time(old, text, repeat)

    assert redact_redos._grows(on_old, "BUNDLE_A", 8_000, 6.0, 0.005) is not None
    found = redact_redos.patterns()
    assert len(found) > 400 and "phrases._IWCONFIG_KEY" in found
    for name in ("named._BUNDLER", "phrases._IWCONFIG"):
        assert (
            redact_redos.scan(8_000, floor=0.005, whole=False, only=name, out=lambda line: None)
            == []
        )


def test_gh_secret_set_gives_its_body_once_per_stretch() -> None:
    found = {
        "gh secret set DEPLOY_TOKEN --body Zq8wLp3xTt9 --repo o/r": "Zq8wLp3xTt9",
        "gh secret set DEPLOY_TOKEN --env prod -b 'Zq8 wLp3x Tt9'": "Zq8 wLp3x Tt9",
        "gh secret set A --repo o/r --body=Zq8wLp3xTt9": "Zq8wLp3xTt9",
        # a later `secret set` whose NAME is --body: the first one's --body gives the value
        "gh secret set A --desc secret set --body Zq8wLp3xTt9": "Zq8wLp3xTt9",
        "gh secret set A secret set B secret set C --body Zq8wLp3xTt9": "Zq8wLp3xTt9",
        # a NAME with a quoted | in it; a value in quotes that holds one
        "gh secret set 'A|B' --body Zq8wLp3xTt9": "Zq8wLp3xTt9",
        'gh secret set A --body "Zq8w|Lp3xTt9"': "Zq8w|Lp3xTt9",
    }
    from kenning.redact.named import commands

    for text, value in found.items():
        spans: list[tuple[int, int, str]] = []
        commands(text, spans.append)
        assert [text[a:b] for a, b, _ in spans] == [value], text
        assert value not in redact(text).text, text
    out = redact("gh secret set A --body Zq8wLp3xTt9 && gh secret set B -b Hk4mRt7vNq2").text
    assert "Zq8wLp3xTt9" not in out and "Hk4mRt7vNq2" not in out
    for text in (
        "gh issue create --body Zq8wLp3xTt9",  # an issue's body is text
        "gh secret set A | tee --body Zq8wLp3xTt9",  # after the command ended
        "gh secret set A 'x' ; echo --body Zq8wLp3xTt9",
    ):
        assert "Zq8wLp3xTt9" in redact(text).text, text


def test_a_netrc_password_is_found_after_its_pairs() -> None:
    from kenning.redact.named import _NETRC

    for text in (
        "machine api.example.com login deploy password Zq8wLp3xTt9",
        "machine h\n  login deploy\n  account ops\n  port 2121\n  password Zq8wLp3xTt9",
        "default login anonymous password Zq8wLp3xTt9",
        # a login that is a value (the user's name is "login")
        "login login port password Zq8wLp3xTt9",
        # more pairs than one match reads: found from a login nearer the password
        "machine h " + "login u account a port 21 " * 4 + "password Zq8wLp3xTt9",
    ):
        assert [m.group("v") for m in _NETRC.finditer(text)] == ["Zq8wLp3xTt9"], text
        assert "Zq8wLp3xTt9" not in redact(text).text, text
    for text in ("machine h login u the password Zq8wLp3xTt9", "login password: Zq8wLp3xTt9"):
        assert _NETRC.search(text) is None, text


def test_code_sees_calls_and_subscripts_in_long_values_in_linear_time() -> None:
    from kenning.redact.named import _CALL, _code

    for value in ("get_token()", "os.environ[", "(0, x)", "b64encode(", "0abc(", "x$abc_d9["):
        assert _CALL.match(value), value
    for value in ("A000000(", "aB3(dE5", "ab(", "a b(", "abc", "\nabc(", "é abc("[:3]):
        assert not _CALL.match(value), value
    assert _code("len(x)") and not _code("aB3(dE5")
    start = time.process_time()
    for i in range(3):
        assert not _CALL.match("a" * 64_000 + str(i))
        assert _CALL.match("a" * 64_000 + "(")
    assert time.process_time() - start < 0.5  # it read each run once per letter: 10 s


def test_a_here_string_to_a_command_that_reads_a_password_is_found_past_other_text() -> None:
    for text in (
        "echo hi; sudo chpasswd <<< 'deploy:Wq8nLp3xZt'",
        "<<<<<<< HEAD\nvncpasswd -f <<< ntd79PJxt4ak > ~/.vnc/passwd",
        "x" * 300 + " && docker login -u me --password-stdin <<< 'Wq8nLp3xZt'",
        "<" * 500 + "\nsudo -S apt update <<< 'Wq8nLp3xZt'",
    ):
        value = "ntd79PJxt4ak" if "vnc" in text else "Wq8nLp3xZt"
        assert value not in redact(text).text, text
    for text in (
        # the command ended before the here-string, or is 200 characters back
        "sudo -S ls | cat <<< 'Wq8nLp3xZt'",
        "sudo -S " + "x" * 200 + " <<< 'Wq8nLp3xZt'",
        "cat <<< 'Wq8nLp3xZt'",
    ):
        assert "Wq8nLp3xZt" in redact(text).text, text

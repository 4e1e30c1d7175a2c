"""The compiled dataclass methods a hook without the server keeps between runs
(kenning.hooks.classcode): the file is read, trusted only when it is this user's own,
follows the code as it changes, and a hook answers the same with it as without."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

from conftest import KEN_BIN

# A process that keeps the methods and defines one dataclass: what its repr says, and
# whether two equal values are equal and hash alike.
PROGRAM = """
import dataclasses, sys
from kenning.hooks import classcode
classcode.keep()

@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0

p = Point(1, 2)
try:
    p.x = 3
except dataclasses.FrozenInstanceError:
    frozen = True
else:
    frozen = False
print(repr(p), p == Point(1, 2), hash(p) == hash(Point(1, 2)), frozen)
"""


def run(program: str = PROGRAM) -> str:
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def kept_file() -> Path:
    tag = sys.implementation.cache_tag
    return Path(os.environ["XDG_STATE_HOME"]) / "kenning" / f"classcode-{tag}.marshal"


def kept() -> dict[str, object]:
    data = marshal.loads(kept_file().read_bytes())
    assert isinstance(data, dict)
    return data


def tamper_repr(answer: str) -> None:
    """Put, under the real source of Point's __repr__, code that says `answer`: what a
    process prints then shows whether it ran the file's code."""
    data = kept()
    source = next(s for s in data if "def __repr__(self)" in s and "x=" in s)
    fake = source.split(" def __repr__", 1)[0]
    fake += f" def __repr__(self):\n  return {answer!r}\n return __repr__"
    data[source] = compile(fake, "<string>", "exec")
    kept_file().write_bytes(marshal.dumps(data))


def test_the_first_process_writes_the_methods_and_the_next_one_runs_them() -> None:
    assert run() == "Point(x=1, y=2) True True True"
    assert kept_file().stat().st_mode & 0o777 == 0o600
    sources = kept()
    assert any("def __init__(self,x:" in s for s in sources), list(sources)
    tamper_repr("from the file")
    assert run() == "from the file True True True"


def test_a_file_others_may_write_or_one_that_does_not_load_is_left_aside() -> None:
    run()
    tamper_repr("from the file")
    kept_file().chmod(0o622)
    assert run() == "Point(x=1, y=2) True True True"
    kept_file().write_bytes(b"not marshal at all")
    kept_file().chmod(0o600)
    assert run() == "Point(x=1, y=2) True True True"
    assert any("def __init__(self,x:" in s for s in kept())  # written anew


PATTERNS = """
import re
from kenning.hooks import classcode
classcode.keep()
print(bool(re.compile("a+").fullmatch("aaa")), bool(re.compile("b+").fullmatch("aaa")))
print(re.compile(r"(?P<word>[a-z]+)-(?P<n>[0-9]+)", re.I).fullmatch("Ab-12").groupdict())
"""


def test_a_patterns_program_is_kept_and_run_from_the_file_the_next_time() -> None:
    answer = "True False\n{'word': 'Ab', 'n': '12'}"
    assert run(PATTERNS) == answer
    data = kept()
    assert ("a+", 0) in data and ("b+", 0) in data
    data["a+", 0], data["b+", 0] = data["b+", 0], data["a+", 0]  # each the other's
    kept_file().write_bytes(marshal.dumps(data))
    assert run(PATTERNS) == "False True\n{'word': 'Ab', 'n': '12'}"  # from the file
    flags, _, groups, names, by_number = data["a+", 0]
    data["a+", 0] = (flags, [12345, 1, 2], groups, names, by_number)  # what no engine runs
    kept_file().write_bytes(marshal.dumps(data))
    assert run(PATTERNS).startswith("True")  # compiled afresh instead


def test_a_class_whose_code_changed_is_compiled_afresh_and_added() -> None:
    run()
    before = set(kept())
    changed = PROGRAM.replace("y: int = 0", "y: int = 0\n    z: str = ''").replace(
        "Point(1, 2)", "Point(1, 2, 'a')"
    )
    assert run(changed) == "Point(x=1, y=2, z='a') True True True"
    after = set(kept())
    assert before < after  # the old code stays for the other hooks' modules
    assert any("def __init__(self,x:" in s and "z:_type_z" in s for s in after - before)


def test_a_cold_hook_answers_the_same_with_the_kept_methods(git_repo: Path) -> None:
    from kenning import items
    from kenning.store import open_store

    store = open_store()
    scope = items.parse_scope("repo:github.com/acme/shop")
    items.add(
        store, "The checkout webhook retries use a 5 s postgres statement timeout", scope=scope
    )
    store.close()

    def prompt(session: str) -> str:
        payload = {
            "session_id": session,
            "transcript_path": "",
            "cwd": str(git_repo),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "why do the checkout webhook retries time out on postgres?",
        }
        done = subprocess.run(
            [str(KEN_BIN), "hook", "UserPromptSubmit", "--agent", "claude"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=git_repo,
            env=dict(os.environ),
            timeout=60,
            check=True,
        )
        assert "Traceback" not in done.stderr
        return done.stdout

    assert not kept_file().exists()
    first = prompt("s-1")
    assert "checkout webhook retries" in first
    assert len(kept()) > 100  # the hook's modules define dozens of dataclasses
    stamp = kept_file().stat().st_mtime_ns
    assert prompt("s-2") == first
    assert kept_file().stat().st_mtime_ns == stamp  # nothing new: not written again

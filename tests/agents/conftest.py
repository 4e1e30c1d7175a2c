"""Fixtures for the agent CLI tests: installed binaries, running stubs, sandboxes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import harness
from .stubs import AnthropicStub, GeminiStub, OpenAIChatStub, OpenAIResponsesStub


def _binary(agent: str) -> Path:
    try:
        return harness.install(agent)
    except harness.AgentUnavailable as exc:
        pytest.skip(f"{agent} CLI unavailable: {exc}")
    # AgentInstallError propagates: npm is here, so a failed install is a real failure.


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return _binary("claude")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return _binary("codex")


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    return _binary("gemini")


@pytest.fixture(scope="session")
def opencode_bin() -> Path:
    return _binary("opencode")


@pytest.fixture(scope="session")
def copilot_bin() -> Path:
    return _binary("copilot")


@pytest.fixture
def anthropic_stub() -> Iterator[AnthropicStub]:
    with AnthropicStub() as stub:
        yield stub


@pytest.fixture
def openai_stub() -> Iterator[OpenAIResponsesStub]:
    with OpenAIResponsesStub() as stub:
        yield stub


@pytest.fixture
def gemini_stub() -> Iterator[GeminiStub]:
    with GeminiStub() as stub:
        yield stub


@pytest.fixture
def chat_stub() -> Iterator[OpenAIChatStub]:
    with OpenAIChatStub() as stub:
        yield stub


@pytest.fixture
def claude_box(tmp_path: Path, anthropic_stub: AnthropicStub, claude_bin: Path) -> harness.Sandbox:
    return harness.prepare_claude(tmp_path / "sandbox", anthropic_stub.url, claude_bin)


@pytest.fixture
def codex_box(tmp_path: Path, openai_stub: OpenAIResponsesStub, codex_bin: Path) -> harness.Sandbox:
    return harness.prepare_codex(tmp_path / "sandbox", openai_stub.url, codex_bin)


@pytest.fixture
def gemini_box(tmp_path: Path, gemini_stub: GeminiStub, gemini_bin: Path) -> harness.Sandbox:
    return harness.prepare_gemini(tmp_path / "sandbox", gemini_stub.url, gemini_bin)


@pytest.fixture
def opencode_box(tmp_path: Path, chat_stub: OpenAIChatStub, opencode_bin: Path) -> harness.Sandbox:
    return harness.prepare_opencode(tmp_path / "sandbox", chat_stub.url, opencode_bin)


@pytest.fixture
def copilot_box(tmp_path: Path, chat_stub: OpenAIChatStub, copilot_bin: Path) -> harness.Sandbox:
    return harness.prepare_copilot(tmp_path / "sandbox", chat_stub.url, copilot_bin)


@pytest.fixture
def probe(tmp_path: Path) -> harness.HookProbe:
    """A hook program in this test's temp folder, with a marker token unique to the test."""
    return harness.HookProbe(tmp_path / "probe", uuid.uuid4().hex[:12])

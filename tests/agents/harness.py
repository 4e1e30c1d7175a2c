"""Drive the real agent CLIs (Claude Code, Codex, Gemini CLI, OpenCode, GitHub Copilot CLI)
offline, against stub model servers.

Everything an agent CLI sees lives in a per-test sandbox: a temporary HOME, XDG folders,
CODEX_HOME, a memory database path and a small git repository.  The CLIs are installed from
npm once per version into a shared cache folder and reused by every later test run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

DEFAULT_CACHE = Path("/var/tmp/kenning-agent-cache")
CACHE_ENV = "KEN_TEST_AGENT_CACHE"
INSTALL_TIMEOUT = 900.0
LOCK_TIMEOUT = 1200.0
DEFAULT_RUN_TIMEOUT = 120.0
STUB_KEY = "stub-key-not-a-secret"
CODEX_KEY_VAR = "KEN_STUB_OPENAI_KEY"
CODEX_MODEL = "gpt-5.1-codex"
GEMINI_MODEL = "gemini-2.5-flash"
CHAT_MODEL = "stub-model"  # the model OpenCode and Copilot CLI are pointed at


class AgentUnavailable(Exception):
    """The agent CLI cannot be installed on this machine at all (npm is missing)."""


class AgentInstallError(RuntimeError):
    """npm is present but installing the pinned package failed."""


@dataclass(frozen=True)
class AgentSpec:
    name: str
    package: str
    version: str
    binary: str  # relative to the install folder
    runs_with_node: bool = False
    # Run once after npm install, under the install lock, with the install folder's
    # ``warm`` subfolder as HOME: for a CLI that unpacks itself on first start.
    warm_up: tuple[str, ...] = ()


AGENTS: dict[str, AgentSpec] = {
    "claude": AgentSpec(
        name="claude",
        package="@anthropic-ai/claude-code",
        version="2.1.332",
        binary="node_modules/@anthropic-ai/claude-code-linux-x64/claude",
    ),
    "codex": AgentSpec(
        name="codex",
        package="@openai/codex",
        version="0.171.0",
        binary="node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    ),
    "gemini": AgentSpec(
        name="gemini",
        package="@google/gemini-cli",
        version="0.61.0",
        binary="node_modules/.bin/gemini",
        runs_with_node=True,
    ),
    "opencode": AgentSpec(
        name="opencode",
        package="opencode-ai",
        version="1.18.33",
        binary="node_modules/opencode-linux-x64/bin/opencode",
    ),
    "copilot": AgentSpec(
        name="copilot",
        package="@github/copilot",
        version="1.0.102",
        binary="node_modules/@github/copilot-linux-x64/copilot",
        # The first start unpacks ~235 MB into $COPILOT_CACHE_HOME (else ~/.cache/copilot);
        # doing it once here lets every sandbox share that folder.
        warm_up=("--version",),
    ),
}


# ----------------------------------------------------------------------------- install


def cache_root() -> Path:
    """The folder that holds one install folder per agent and version."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else DEFAULT_CACHE


def install_dir(agent: str) -> Path:
    spec = AGENTS[agent]
    return cache_root() / f"{spec.name}-{spec.version}"


def copilot_cache() -> Path:
    """Where Copilot CLI's unpacked package lives, shared by every sandbox."""
    return install_dir("copilot") / "copilot-cache"


def _npm_env(root: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key in {"PATH", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS"}
        or key.lower() in {"http_proxy", "https_proxy", "no_proxy"}
        or key.lower().startswith("npm_config_")  # e.g. a registry mirror set by env
    }
    # npm reads and writes under ~ (~/.npmrc, ~/.npm); point HOME into the cache so neither
    # the real home nor a test's temp HOME plays a part, and keep npm's download cache next
    # to the installs so a re-install is quick.
    env["HOME"] = str(root / "npm-home")
    env["npm_config_cache"] = str(root / "npm-cache")
    env["npm_config_update_notifier"] = "false"
    env["npm_config_fund"] = "false"
    env["npm_config_audit"] = "false"
    return env


@contextlib.contextmanager
def _file_lock(path: Path, timeout: float) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AgentInstallError(f"timed out waiting for lock {path}") from None
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def install(agent: str) -> Path:
    """Install the pinned npm package for ``agent`` (once) and return its executable.

    For gemini the returned path is npm's bin shim (a node script; run it with ``node``,
    which ``run_gemini`` does).  Raises :class:`AgentUnavailable` when npm is missing and
    :class:`AgentInstallError` when npm fails.
    """
    spec = AGENTS[agent]
    npm = shutil.which("npm")
    if npm is None:
        raise AgentUnavailable(f"npm not found on PATH; cannot install {spec.package}")
    if spec.runs_with_node and shutil.which("node") is None:
        raise AgentUnavailable(f"node not found on PATH; cannot run {spec.package}")
    root = cache_root()
    dest = install_dir(agent)
    binary = dest / spec.binary
    stamp = dest / ".kenning-installed"
    if stamp.exists() and binary.exists():
        return binary
    with _file_lock(root / f"{dest.name}.lock", LOCK_TIMEOUT):
        if stamp.exists() and binary.exists():
            return binary
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        (dest / "package.json").write_text(
            json.dumps({"name": f"kenning-agent-{spec.name}", "private": True}) + "\n"
        )
        command = [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            f"{spec.package}@{spec.version}",
        ]
        try:
            done = run_bounded(command, dest, _npm_env(root), INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise AgentInstallError(
                f"npm install {spec.package}@{spec.version} timed out after {INSTALL_TIMEOUT}s"
            ) from exc
        if done.returncode != 0:
            raise AgentInstallError(
                f"npm install {spec.package}@{spec.version} failed ({done.returncode}):\n"
                f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
            )
        if not binary.exists():
            raise AgentInstallError(
                f"npm installed {spec.package}@{spec.version} but {binary} is missing"
            )
        if spec.warm_up:
            _warm_up(spec, dest, binary)
        stamp.write_text(f"{spec.package}@{spec.version}\n")
    return binary


def _warm_up(spec: AgentSpec, dest: Path, binary: Path) -> None:
    home = dest / "warm"
    home.mkdir(exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "COPILOT_CACHE_HOME": str(dest / "copilot-cache"),
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_OFFLINE": "true",
    }
    try:
        done = run_bounded([str(binary), *spec.warm_up], dest, env, INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise AgentInstallError(f"{binary} {' '.join(spec.warm_up)} timed out") from exc
    if done.returncode != 0:
        raise AgentInstallError(
            f"{binary} {' '.join(spec.warm_up)} failed ({done.returncode}):\n"
            f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        )


# ----------------------------------------------------------------------------- sandbox


@dataclass
class Sandbox:
    """One agent's isolated world.  ``env`` is the complete environment the CLI runs with."""

    agent: str
    root: Path  # the test's temp folder; everything below lives in it
    home: Path
    repo: Path  # a git repository with one commit; the agent's working directory
    env: dict[str, str]
    base_url: str
    binary: Path | None = None

    @property
    def db(self) -> Path:
        return Path(self.env["KEN_DB"])

    @property
    def codex_home(self) -> Path:
        return Path(self.env["CODEX_HOME"])

    @property
    def claude_settings(self) -> Path:
        return self.home / ".claude" / "settings.json"

    @property
    def codex_config(self) -> Path:
        return self.codex_home / "config.toml"

    @property
    def codex_hooks(self) -> Path:
        return self.codex_home / "hooks.json"

    @property
    def gemini_settings(self) -> Path:
        return self.home / ".gemini" / "settings.json"

    @property
    def opencode_dir(self) -> Path:
        return Path(self.env["XDG_CONFIG_HOME"]) / "opencode"

    @property
    def opencode_config(self) -> Path:
        return self.opencode_dir / "opencode.json"

    @property
    def copilot_home(self) -> Path:
        return self.home / ".copilot"


def _search_path() -> str:
    """PATH for agents: this interpreter's bin first (so the venv's ``ken`` resolves)."""
    dirs = [str(Path(sys.executable).parent)]
    for tool in ("node", "git"):
        found = shutil.which(tool)
        if found:
            dirs.append(str(Path(found).parent))
    dirs += ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    return os.pathsep.join(dict.fromkeys(dirs))


def base_env(root: Path) -> dict[str, str]:
    """A minimal, explicit environment rooted in ``root`` (nothing from the real HOME)."""
    home = root / "home"
    tmp = root / "tmp"
    env = {
        "HOME": str(home),
        "USER": "kenning-test",
        "LOGNAME": "kenning-test",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TMPDIR": str(tmp),
        "PATH": _search_path(),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "CODEX_HOME": str(home / ".codex"),
        "KEN_DB": str(root / "memory.db"),
        # Each hook runs in its own process: a warm hook server would outlive the test.
        "KEN_HOOK_SERVER": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
    }
    for key in ("HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    Path(env["XDG_CACHE_HOME"]).mkdir(parents=True, exist_ok=True)
    Path(env["CODEX_HOME"]).mkdir(parents=True, exist_ok=True)
    return env


def make_repo(path: Path, env: Mapping[str, str]) -> Path:
    """A git repository with one commit, made with ``env`` (so the sandbox's gitconfig)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "README.md").write_text("# sandbox project\n\nA repository for agent tests.\n")
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "README.md"],
        ["commit", "-q", "-m", "initial commit"],
    ):
        subprocess.run(
            ["git", *args],
            cwd=path,
            env=dict(env),
            check=True,
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    return path


def make_sandbox(root: Path, agent: str, base_url: str, binary: Path | None = None) -> Sandbox:
    """The parts every agent shares: folders, env, gitconfig and the git repository."""
    root.mkdir(parents=True, exist_ok=True)
    env = base_env(root)
    home = Path(env["HOME"])
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Kenning Test\n\temail = test@kenning.invalid\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    )
    repo = make_repo(root / "project", env)
    return Sandbox(
        agent=agent, root=root, home=home, repo=repo, env=env, base_url=base_url, binary=binary
    )


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else {}


def _toml_str(value: str) -> str:
    # A JSON string is a valid TOML basic string for everything json.dumps emits.
    return json.dumps(value)


# ----------------------------------------------------------------------------- claude


def prepare_claude(root: Path, base_url: str, binary: Path | None = None) -> Sandbox:
    """Sandbox for Claude Code pointed at an Anthropic stub at ``base_url``."""
    box = make_sandbox(root, "claude", base_url, binary)
    box.env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": STUB_KEY,
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "ENABLE_TOOL_SEARCH": "false",
        }
    )
    _write_json(box.claude_settings, {})
    return box


def add_claude_hook(box: Sandbox, event: str, command: str, timeout: int = 30) -> None:
    """Append a command hook for ``event`` to ``$HOME/.claude/settings.json``."""
    settings = _read_json(box.claude_settings)
    groups = settings.setdefault("hooks", {}).setdefault(event, [])
    groups.append({"hooks": [{"type": "command", "command": command, "timeout": timeout}]})
    _write_json(box.claude_settings, settings)


def run_claude(
    box: Sandbox,
    prompt: str,
    extra_args: Sequence[str] = (),
    timeout: float = DEFAULT_RUN_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``claude -p PROMPT`` in the sandbox repo."""
    binary = box.binary or install("claude")
    return run_process([str(binary), "-p", prompt, *extra_args], box, timeout)


# ----------------------------------------------------------------------------- codex

CODEX_EVENTS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "Stop": "stop",
    "SessionEnd": "session_end",
    "PreToolUse": "pre_tool_use",
    "PostToolUse": "post_tool_use",
}


def prepare_codex(root: Path, base_url: str, binary: Path | None = None) -> Sandbox:
    """Sandbox for Codex pointed at an OpenAI Responses stub at ``base_url``."""
    box = make_sandbox(root, "codex", base_url, binary)
    box.env[CODEX_KEY_VAR] = STUB_KEY
    box.codex_config.write_text(
        "\n".join(
            [
                f"model = {_toml_str(CODEX_MODEL)}",
                'model_provider = "stub"',
                'approval_policy = "never"',
                "check_for_update_on_startup = false",
                "",
                "[analytics]",
                "enabled = false",
                "",
                "[feedback]",
                "enabled = false",
                "",
                "[features]",
                "plugins = false",
                "",
                "[model_providers.stub]",
                'name = "kenning stub"',
                f"base_url = {_toml_str(base_url.rstrip('/') + '/v1')}",
                f"env_key = {_toml_str(CODEX_KEY_VAR)}",
                'wire_api = "responses"',
                "request_max_retries = 0",
                "stream_max_retries = 0",
                "",
            ]
        )
    )
    return box


def add_codex_hook(
    box: Sandbox, event: str, command: str, timeout: int | None = 30, trust: bool = True
) -> None:
    """Append a command hook for ``event`` to ``$CODEX_HOME/hooks.json``; trust it too."""
    data = _read_json(box.codex_hooks)
    if event == "SessionEnd" and timeout is not None:
        timeout = min(timeout, 3)  # Codex clamps it anyway, and reports that as an error item
    handler: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        handler["timeout"] = timeout
    data.setdefault("hooks", {}).setdefault(event, []).append({"hooks": [handler]})
    _write_json(box.codex_hooks, data)
    if trust:
        trust_codex_hooks(box)


def codex_hook_hash(event: str, handler: Mapping[str, Any]) -> str:
    """The ``trusted_hash`` Codex expects for one command handler of ``event``."""
    snake = CODEX_EVENTS.get(event) or _snake(event)
    timeout = handler.get("timeout", handler.get("timeout_sec", 600))
    if snake == "session_end":
        timeout = min(timeout, 3)
    normal = {
        "event_name": snake,
        "hooks": [
            {
                "type": "command",
                "command": handler["command"],
                "timeout": timeout,
                "async": bool(handler.get("async", False)),
            }
        ],
    }
    blob = json.dumps(normal, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


TRUST_BEGIN = "# --- kenning test: trusted hooks (generated) ---"


def trust_codex_hooks(box: Sandbox) -> list[str]:
    """Mark every command hook in ``hooks.json`` as trusted in ``config.toml``.

    Rewrites the generated block at the end of config.toml; returns the state keys written.
    """
    data = _read_json(box.codex_hooks)
    path = str(box.codex_hooks)
    lines = [TRUST_BEGIN]
    keys = []
    for event, groups in data.get("hooks", {}).items():
        snake = CODEX_EVENTS.get(event) or _snake(event)
        for g, group in enumerate(groups):
            for h, handler in enumerate(group.get("hooks", [])):
                if handler.get("type", "command") != "command":
                    continue
                key = f"{path}:{snake}:{g}:{h}"
                keys.append(key)
                lines += [
                    f"[hooks.state.{_toml_str(key)}]",
                    f"trusted_hash = {_toml_str(codex_hook_hash(event, handler))}",
                    "",
                ]
    text = box.codex_config.read_text()
    text = text.split(TRUST_BEGIN)[0].rstrip("\n") + "\n\n"
    box.codex_config.write_text(text + "\n".join(lines))
    return keys


def run_codex(
    box: Sandbox,
    prompt: str,
    extra_args: Sequence[str] = (),
    timeout: float = DEFAULT_RUN_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``codex exec --skip-git-repo-check --json [extra_args] PROMPT`` in the sandbox repo."""
    binary = box.binary or install("codex")
    command = [str(binary), "exec", "--skip-git-repo-check", "--json", *extra_args, prompt]
    return run_process(command, box, timeout)


# ----------------------------------------------------------------------------- gemini


def prepare_gemini(root: Path, base_url: str, binary: Path | None = None) -> Sandbox:
    """Sandbox for the Gemini CLI pointed at a Gemini stub at ``base_url``."""
    box = make_sandbox(root, "gemini", base_url, binary)
    box.env.update(
        {
            "GEMINI_API_KEY": STUB_KEY,
            "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }
    )
    _write_json(
        box.gemini_settings,
        {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
        },
    )
    return box


def add_gemini_hook(
    box: Sandbox,
    event: str,
    command: str,
    name: str | None = None,
    timeout_ms: int = 30_000,
    matcher: str = "*",
) -> None:
    """Append a command hook for ``event`` to ``$HOME/.gemini/settings.json``."""
    settings = _read_json(box.gemini_settings)
    groups = settings.setdefault("hooks", {}).setdefault(event, [])
    handler = {
        "name": name or f"kenning-test-{event}",
        "type": "command",
        "command": command,
        "timeout": timeout_ms,
    }
    groups.append({"matcher": matcher, "hooks": [handler]})
    _write_json(box.gemini_settings, settings)


def run_gemini(
    box: Sandbox,
    prompt: str,
    extra_args: Sequence[str] = (),
    timeout: float = DEFAULT_RUN_TIMEOUT,
    model: str = GEMINI_MODEL,
) -> subprocess.CompletedProcess[str]:
    """``gemini -m MODEL -p PROMPT`` (run with node) in the sandbox repo."""
    binary = box.binary or install("gemini")
    node = shutil.which("node", path=box.env["PATH"]) or "node"
    command = [node, str(binary), "-m", model, "-p", prompt, *extra_args]
    return run_process(command, box, timeout)


# ----------------------------------------------------------------------------- opencode

OPENCODE_PLUGIN_PACKAGE = "@opencode-ai/plugin"


def prepare_opencode(root: Path, base_url: str, binary: Path | None = None) -> Sandbox:
    """Sandbox for OpenCode pointed at a Chat Completions stub at ``base_url``.

    OpenCode npm-installs its plugin package into its config folder at start (and waits
    for the registry) unless that folder has ``node_modules`` and a lockfile naming every
    dependency of its ``package.json``: both are written here, so it starts offline.
    """
    box = make_sandbox(root, "opencode", base_url, binary)
    box.env.update(
        {
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
        }
    )
    _write_json(
        box.opencode_config,
        {
            "$schema": "https://opencode.ai/config.json",
            "model": f"stub/{CHAT_MODEL}",
            "small_model": f"stub/{CHAT_MODEL}",
            "autoupdate": False,
            "share": "disabled",
            "provider": {
                "stub": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "kenning stub",
                    "options": {"baseURL": base_url.rstrip("/") + "/v1", "apiKey": STUB_KEY},
                    "models": {CHAT_MODEL: {"name": "Stub model", "tool_call": True}},
                }
            },
        },
    )
    version = AGENTS["opencode"].version
    dependencies = {OPENCODE_PLUGIN_PACKAGE: version}
    (box.opencode_dir / "node_modules").mkdir(parents=True, exist_ok=True)
    _write_json(box.opencode_dir / "package.json", {"dependencies": dependencies})
    _write_json(
        box.opencode_dir / "package-lock.json",
        {"lockfileVersion": 3, "packages": {"": {"dependencies": dependencies}}},
    )
    return box


def run_opencode(
    box: Sandbox,
    prompt: str,
    extra_args: Sequence[str] = (),
    timeout: float = DEFAULT_RUN_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``opencode run [extra_args] WORD...`` in the sandbox repo.

    The prompt goes as one argument per word: OpenCode joins them with spaces, while one
    argument holding spaces would reach the model wrapped in quotes.
    """
    binary = box.binary or install("opencode")
    return run_process([str(binary), "run", *extra_args, *prompt.split()], box, timeout)


PROBE_PLUGIN = """\
// kenning test probe: logs each plugin hook call and injects the probe's markers.
import { appendFileSync } from "node:fs"
import { spawnSync } from "node:child_process"

const [TOKEN, LOG] = %s
const plain = (value) => {
  try { return JSON.parse(JSON.stringify(value ?? null)) } catch { return String(value) }
}
const note = (hook, input, extra) => {
  const stdin = JSON.stringify({ input: plain(input), ...extra })
  appendFileSync(LOG, JSON.stringify({ event: hook, stdin }) + "\\n")
}
const SESSION_EVENTS = ["session.created", "session.idle", "session.compacted", "session.error"]
const marker = (hook) => `KEN-PROBE-${hook}-${TOKEN}`

export const KenningProbe = async () => ({
  event: async ({ event }) => {
    if (SESSION_EVENTS.includes(event.type)) note(event.type, event.properties, {})
  },
  "chat.message": async (input, output) => {
    note("chat.message", input, { message: plain(output.message), parts: plain(output.parts) })
    const last = output.parts[output.parts.length - 1]
    output.parts.push({
      id: last.id + "z", sessionID: output.message.sessionID, messageID: output.message.id,
      type: "text", text: marker("chat.message"), synthetic: true,
    })
  },
  "experimental.chat.system.transform": async (input, output) => {
    note("system.transform", input, { system: output.system.length })
    output.system.push(marker("system.transform"))
  },
  "tool.execute.after": async (input, output) => {
    note("tool.execute.after", input, { output: plain(output) })
  },
})
"""


def opencode_probe_plugin(box: Sandbox, probe: HookProbe) -> Path:
    """Install a plugin that logs OpenCode's plugin hooks into ``probe``'s log and adds
    its markers: ``system.transform`` to the system prompt, ``chat.message`` to the
    prompt."""
    path = box.opencode_dir / "plugins" / "kenning-probe.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = [probe.token, str(probe.log)]
    path.write_text(PROBE_PLUGIN % json.dumps(settings))
    return path


# ----------------------------------------------------------------------------- copilot


def prepare_copilot(root: Path, base_url: str, binary: Path | None = None) -> Sandbox:
    """Sandbox for GitHub Copilot CLI pointed at a Chat Completions stub at ``base_url``:
    offline mode with a bring-your-own-key provider, so no GitHub login."""
    box = make_sandbox(root, "copilot", base_url, binary)
    box.env.update(
        {
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_PROVIDER_BASE_URL": base_url.rstrip("/") + "/v1",
            "COPILOT_PROVIDER_API_KEY": STUB_KEY,
            "COPILOT_MODEL": CHAT_MODEL,
            "COPILOT_CACHE_HOME": str(copilot_cache()),
        }
    )
    box.copilot_home.mkdir(parents=True, exist_ok=True)
    return box


def add_copilot_hook(box: Sandbox, event: str, command: str, timeout: int = 30) -> None:
    """Add a command hook for ``event`` (camelCase) to ``~/.copilot/hooks/kenning-test.json``."""
    path = box.copilot_home / "hooks" / "kenning-test.json"
    data = _read_json(path) or {"version": 1, "hooks": {}}
    handler = {"type": "command", "bash": command, "timeoutSec": timeout}
    data["hooks"].setdefault(event, []).append(handler)
    _write_json(path, data)


def run_copilot(
    box: Sandbox,
    prompt: str,
    extra_args: Sequence[str] = (),
    timeout: float = DEFAULT_RUN_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``copilot -p PROMPT --no-auto-update [extra_args]`` in the sandbox repo.

    In -p mode an MCP tool runs only with ``--allow-all-tools`` (or ``--allow-tool``).
    """
    binary = box.binary or install("copilot")
    command = [str(binary), "-p", prompt, "--no-auto-update", *extra_args]
    return run_process(command, box, timeout)


# ----------------------------------------------------------------------------- probing

PROBE_SCRIPT = """\
import json
import sys

event, mode, marker, log = sys.argv[1:5]
raw = sys.stdin.read()
with open(log, "a", encoding="utf-8") as handle:
    handle.write(json.dumps({"event": event, "stdin": raw}) + "\\n")
if mode == "text":
    print(marker)
elif mode == "context":
    out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": marker}}
    print(json.dumps(out))
elif mode == "additional":
    print(json.dumps({"additionalContext": marker}))
elif mode == "empty":
    print("{}")
"""

PROBE_MODES = ("text", "context", "additional", "empty", "silent")


class HookProbe:
    """A tiny hook program that logs each call's stdin and prints a marker.

    ``command(event, mode)`` gives the shell command to register for ``event``; ``mode`` is
    ``text`` (marker as plain stdout), ``context`` (marker as JSON
    ``hookSpecificOutput.additionalContext``), ``additional`` (JSON with a top-level
    ``additionalContext``, Copilot CLI's form), ``empty`` (prints ``{}``) or ``silent``.
    """

    def __init__(self, folder: Path, token: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.token = token
        self.script = folder / "probe_hook.py"
        self.log = folder / "probe_hook.jsonl"
        self.script.write_text(PROBE_SCRIPT)

    def marker(self, event: str) -> str:
        return f"KEN-PROBE-{event}-{self.token}"

    def command(self, event: str, mode: str) -> str:
        if mode not in PROBE_MODES:
            raise ValueError(f"unknown probe mode {mode!r}")
        parts = [sys.executable, str(self.script), event, mode, self.marker(event), str(self.log)]
        return " ".join(shlex.quote(part) for part in parts)

    def calls(self) -> list[tuple[str, Any]]:
        """``(event, payload)`` for every hook call, in the order they ran."""
        if not self.log.exists():
            return []
        calls = []
        for line in self.log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            raw = entry["stdin"]
            calls.append((entry["event"], json.loads(raw) if raw.strip() else None))
        return calls

    def events(self) -> list[str]:
        return [event for event, _ in self.calls()]

    def payload(self, event: str) -> Any:
        """The payload of the first call of ``event`` (KeyError when it never ran)."""
        for name, payload in self.calls():
            if name == event:
                return payload
        raise KeyError(f"hook {event} never ran; ran: {self.events()}")


SANDBOX_PLACEHOLDER = "/tmp/SANDBOX"


def sanitize(value: Any, box: Sandbox, extra: Mapping[str, str] | None = None) -> Any:
    """``value`` with the sandbox's temp paths (and ``extra`` strings) made stable.

    The sandbox root becomes ``/tmp/SANDBOX``; Claude's project folder name (the root with
    every non-alphanumeric character turned into ``-``) becomes ``-tmp-SANDBOX``.
    """
    replacements: dict[str, str] = {}
    for root in dict.fromkeys([str(box.root), str(box.root.resolve())]):
        replacements[root] = SANDBOX_PLACEHOLDER
        replacements[re.sub(r"[^A-Za-z0-9]", "-", root)] = re.sub(
            r"[^A-Za-z0-9]", "-", SANDBOX_PLACEHOLDER
        )
    replacements.update(extra or {})
    ordered = sorted(replacements.items(), key=lambda item: -len(item[0]))

    def fix(item: Any) -> Any:
        if isinstance(item, str):
            for old, new in ordered:
                item = item.replace(old, new)
            return item
        if isinstance(item, dict):
            return {fix(k): fix(v) for k, v in item.items()}
        if isinstance(item, list):
            return [fix(v) for v in item]
        return item

    return fix(value)


def codex_events(stdout: str) -> list[dict[str, Any]]:
    """The JSON events ``codex exec --json`` printed (non-JSON lines skipped)."""
    events = []
    for line in stdout.splitlines():
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict):
                events.append(item)
    return events


def codex_messages(stdout: str) -> list[str]:
    """The assistant messages in ``codex exec --json`` output."""
    return [
        event["item"].get("text", "")
        for event in codex_events(stdout)
        if event.get("type") == "item.completed"
        and event.get("item", {}).get("type") == "agent_message"
    ]


# ----------------------------------------------------------------------------- running


class AgentTimeout(AssertionError):
    """The agent CLI did not finish in time (its whole process group was killed)."""


def run_process(
    command: Sequence[str], box: Sandbox, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``box.repo`` with exactly ``box.env``, stdin from /dev/null.

    Raises :class:`AgentTimeout` (with the output so far) when it runs past ``timeout``.
    """
    try:
        return run_bounded(command, box.repo, box.env, timeout)
    except subprocess.TimeoutExpired as exc:
        raise AgentTimeout(
            f"{command[0]} timed out after {timeout}s\n"
            f"--- stdout ---\n{str(exc.output or '')[-4000:]}\n"
            f"--- stderr ---\n{str(exc.stderr or '')[-4000:]}"
        ) from None


def run_bounded(
    command: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in its own process group, capturing text output.

    Whatever it leaves running (hooks, MCP servers, npm scripts) is killed when it exits;
    on timeout the whole group is killed and ``subprocess.TimeoutExpired`` is raised with
    the output captured so far.
    """
    # Output goes to temp files, not pipes: a grandchild that keeps a pipe open cannot stall
    # us after the CLI itself has exited, and no pipe buffer can fill up.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        with subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        ) as proc:
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(proc.pid)
            returncode = proc.wait(timeout=30)
        stdout, stderr = _read_back(out), _read_back(err)
    if timed_out:
        raise subprocess.TimeoutExpired(list(command), timeout, stdout, stderr)
    return subprocess.CompletedProcess(list(command), returncode, stdout, stderr)


def _read_back(handle: IO[bytes]) -> str:
    handle.seek(0)
    return handle.read().decode("utf-8", errors="replace")


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_ken(box: Sandbox, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`ken ARGS` in the sandbox repo with exactly the sandbox's environment, run in this
    process (click's runner): what the agent CLIs start in their own processes is the
    hooks and `ken mcp`, while this is the person's setting up and looking afterwards, and
    a `ken` process of its own costs ~0.3 s of start-up each time (~100 of them in these
    tests). Nothing of this process's environment is left beside the sandbox's."""
    from click.testing import CliRunner

    from kenning.cli import cli

    env: dict[str, str | None] = {key: None for key in os.environ if key not in box.env}
    env.update(box.env)
    with contextlib.chdir(box.repo):
        result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    done = subprocess.CompletedProcess(
        ["ken", *args], result.exit_code, result.stdout, result.stderr
    )
    if check:
        assert done.returncode == 0, f"ken {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done

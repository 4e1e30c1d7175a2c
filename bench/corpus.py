"""Realistic coding-agent memories and search queries, generated from a fixed seed.

Memories look like what agents and people store: preferences, decisions, facts, tasks,
handoffs and lessons about real tools, in a handful of repos, workstreams and projects,
with 1-3 sentence bodies. About 2% carry a fake secret (an AWS key id, a GitHub token,
a password assignment) inside an ordinary sentence, so redaction has work to do.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

TOOLS = [
    "pnpm",
    "npm",
    "yarn",
    "uv",
    "poetry",
    "pip",
    "cargo",
    "go",
    "make",
    "docker",
    "compose",
    "kubectl",
    "helm",
    "terraform",
    "ansible",
    "pytest",
    "jest",
    "vitest",
    "playwright",
    "cypress",
    "ruff",
    "mypy",
    "eslint",
    "prettier",
    "black",
    "alembic",
    "prisma",
    "sqlalchemy",
    "django",
    "flask",
    "fastapi",
    "rails",
    "nextjs",
    "vite",
    "webpack",
    "babel",
    "tsc",
    "node",
    "deno",
    "bun",
    "redis",
    "postgres",
    "sqlite",
    "mysql",
    "kafka",
    "rabbitmq",
    "celery",
    "sidekiq",
    "nginx",
    "caddy",
    "grafana",
    "prometheus",
    "sentry",
    "datadog",
    "github",
    "gitlab",
    "circleci",
    "buildkite",
    "bazel",
    "gradle",
    "maven",
    "swift",
    "xcode",
    "flutter",
]
COMPONENTS = [
    "billing service",
    "checkout flow",
    "auth middleware",
    "session store",
    "search index",
    "payment webhook",
    "invoice export",
    "user import",
    "feature flags",
    "rate limiter",
    "email worker",
    "image resizer",
    "cache layer",
    "api gateway",
    "admin dashboard",
    "mobile client",
    "sync job",
    "audit log",
    "migration runner",
    "config loader",
    "retry queue",
    "pdf renderer",
    "notification service",
    "graphql schema",
    "cron scheduler",
    "metrics exporter",
    "login page",
    "signup form",
    "cart totals",
    "tax calculator",
]
VERBS = [
    "breaks",
    "times out",
    "retries",
    "fails",
    "leaks memory",
    "deadlocks",
    "slows down",
    "needs a restart",
    "drops events",
    "double charges",
    "logs twice",
    "returns 500s",
    "skips validation",
    "caches stale data",
    "races",
    "panics",
    "hangs",
    "rounds wrong",
]
CONDITIONS = [
    "under load",
    "on cold start",
    "after a deploy",
    "when the queue backs up",
    "in staging only",
    "on Fridays",
    "with large uploads",
    "when the token expires",
    "during migrations",
    "behind the VPN",
    "on arm64 runners",
    "with daylight saving",
    "in CI but not locally",
    "when redis is down",
    "for EU customers",
    "on Safari",
]
ACTIONS = [
    "run the migrations before deploying",
    "pin the version in the lockfile",
    "use the shared fixture instead of mocking",
    "bump the timeout to 30 seconds",
    "keep the handler idempotent",
    "add an index on created_at",
    "batch the writes",
    "read the config from the environment",
    "log the request id",
    "retry with backoff",
    "feature-flag the rollout",
    "split the job into chunks",
    "vendor the dependency",
    "use Decimal for money",
    "store times in UTC",
    "lint before committing",
    "squash merge pull requests",
    "rebase on main before review",
    "tag releases with semver",
    "write a regression test first",
    "document the env vars in the README",
]
PEOPLE = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Fatima", "Goran", "Hana", "Ivan", "Jun"]
REPOS = [
    "acme/shop",
    "acme/billing",
    "acme/infra",
    "acme/mobile",
    "acme/web",
    "acme/data",
    "acme/auth",
    "acme/search",
    "oss/kenning",
    "oss/parser",
    "me/dotfiles",
    "me/blog",
]
BRANCHES = ["main", "feature/pay", "fix/login", "chore/deps", "perf/cache", "release/2.4"]
PROJECTS = ["billing-v2", "checkout-redesign", "infra-migration", "mobile-offline", "search"]
TAGS = [
    "db",
    "ci",
    "deploy",
    "testing",
    "perf",
    "security",
    "frontend",
    "backend",
    "infra",
    "payments",
    "auth",
    "python",
    "typescript",
    "docker",
    "k8s",
    "observability",
    "flaky",
    "migration",
    "api",
    "cache",
    "mobile",
    "docs",
    "release",
    "oncall",
]
KINDS = [
    ("fact", 25),
    ("decision", 15),
    ("preference", 12),
    ("correction", 6),
    ("task", 10),
    ("handoff", 5),
    ("summary", 4),
    ("lesson", 10),
    ("note", 13),
]
SECRETS = [
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "password=Sup3rS3cretPassw0rd!",
    "sk-proj-abc123def456ghi789jkl012mno345",
]


def _sentence(rng: random.Random) -> str:
    shape = rng.randrange(7)
    tool, other = rng.sample(TOOLS, 2)
    comp = rng.choice(COMPONENTS)
    if shape == 0:
        return f"The {comp} {rng.choice(VERBS)} {rng.choice(CONDITIONS)}."
    if shape == 1:
        return f"Always {rng.choice(ACTIONS)} in the {comp}."
    if shape == 2:
        return f"We use {tool} rather than {other} for the {comp}."
    if shape == 3:
        return f"{rng.choice(PEOPLE)} said to {rng.choice(ACTIONS)} before touching {tool}."
    if shape == 4:
        return (
            f"{tool.capitalize()} {rng.choice(VERBS)} {rng.choice(CONDITIONS)}; "
            f"{rng.choice(ACTIONS)}."
        )
    if shape == 5:
        return f"The {comp} reads its settings from {tool} and {other}."
    return f"Fixed by setting up {tool} so the {comp} no longer {rng.choice(VERBS)}."


def _title(rng: random.Random, kind: str) -> str:
    tool, other = rng.sample(TOOLS, 2)
    comp = rng.choice(COMPONENTS)
    if kind == "preference":
        return f"Use {tool}, not {other}, for the {comp}"
    if kind == "decision":
        return f"Decided: the {comp} moves to {tool}"
    if kind == "correction":
        return f"The {comp} does not use {other}; it uses {tool}"
    if kind == "task":
        return f"Finish the {comp} change: {rng.choice(ACTIONS)}"
    if kind == "handoff":
        return f"Handoff: {comp} half done, {tool} config pending"
    if kind == "lesson":
        return f"{tool.capitalize()} {rng.choice(VERBS)} {rng.choice(CONDITIONS)}"
    if kind == "summary":
        return f"Session summary: {comp} and {tool}"
    return f"The {comp} {rng.choice(VERBS)} {rng.choice(CONDITIONS)}"


def _scope(rng: random.Random) -> str:
    roll = rng.random()
    repo = rng.choice(REPOS)
    if roll < 0.55:
        return f"repo:github.com/{repo}"
    if roll < 0.70:
        return f"workstream:github.com/{repo}#{rng.choice(BRANCHES)}"
    if roll < 0.82:
        return f"project:{rng.choice(PROJECTS)}"
    if roll < 0.92:
        return "global"
    return f"session:{rng.getrandbits(64):016x}"


def memory(rng: random.Random) -> dict[str, object]:
    kind = rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]
    sentences = [_sentence(rng) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.02:
        sentences.append(f"The old setup used {rng.choice(SECRETS)} in the env file.")
    data: dict[str, object] = {
        "title": _title(rng, kind),
        "body": " ".join(sentences),
        "kind": kind,
        "scope": _scope(rng),
        "tags": rng.sample(TAGS, rng.randint(0, 3)),
    }
    if rng.random() < 0.15:
        data["links"] = [f"file:src/{rng.choice(COMPONENTS).replace(' ', '_')}.py"]
    if rng.random() < 0.2:
        data["evidence"] = f"{rng.choice(PEOPLE)}: {_sentence(rng)}"
    return data


def memories(count: int, seed: int = 7) -> Iterator[str]:
    """`count` JSON lines as `ken export` writes them (the fields import reads)."""
    rng = random.Random(seed)
    for _ in range(count):
        yield json.dumps(memory(rng))


QUERY_WORDS = sorted(
    set(TOOLS)
    | {w for c in COMPONENTS for w in c.split()}
    | {
        "migrations",
        "deploying",
        "timeout",
        "flaky",
        "lockfile",
        "retry",
        "staging",
        "load",
        "index",
        "webhook",
        "token",
        "decimal",
        "utc",
        "rollout",
        "fixture",
        "restart",
    }
)


def queries(count: int = 200, seed: int = 11) -> list[str]:
    """1-3 word queries, as people and recall type them (some rare, some common words)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = rng.sample(QUERY_WORDS, rng.choices([1, 2, 3], weights=[4, 4, 2])[0])
        if rng.random() < 0.2:  # typing: the last word cut short, matched as a prefix
            last = words[-1]
            words[-1] = last[: max(3, len(last) - 2)]
        out.append(" ".join(words))
    return out

"""The `ken` console entry point. Placeholder until the CLI lands."""


def main() -> None:
    raise SystemExit("ken: not built yet")

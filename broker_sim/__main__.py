"""`python -m broker_sim COMMAND`: `check` runs the invariant checker (`broker_sim.check.cli`)."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["check"]:
        from broker_sim.check.cli import main as check_main

        return check_main(argv[1:])
    print("usage: python -m broker_sim check DATA_DIR [--journal PATH] [--report PATH]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

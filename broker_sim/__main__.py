"""`python -m broker_sim run|check ...`: the fleet and its checker (see broker_sim/cli.py)."""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and sys.argv[1:2] == ["sim"]:
    from broker_sim.hash_seed import ensure_fixed

    ensure_fixed(sys.argv[1:])  # before the imports below, which a run again would pay twice

from broker_sim.cli import main

if __name__ == "__main__":
    try:
        status = main()
    except BrokenPipeError:  # `... | head`: the reader left; exit quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 1
    sys.exit(status)

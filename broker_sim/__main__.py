"""`python -m broker_sim run|check ...`: the fleet and its checker (see broker_sim/cli.py)."""

from __future__ import annotations

import sys

from broker_sim.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""The simulator's fixed string hash seed: the command runs itself again with `PYTHONHASHSEED=0` when it is not set so.

A seed's run depends on the order of sets of names, which the hash seed decides, so every run of
`python -m broker_sim sim` hashes with seed 0. `ensure_fixed` is called by `python -m broker_sim`
before it imports the fleet and the controller (running again after them cost each run about
0.5 CPU s more: a one-seed run 2.27 s, 1.75 s now) and by the sim's `main` for callers that come
to it directly.
This module imports nothing of the package.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: the value every simulation runs with
FIXED = "0"


def ensure_fixed(arguments: Sequence[str]) -> None:
    """Return when the hash seed is fixed; else run `python -m broker_sim ARGUMENTS` in this process's
    place with it fixed (never returns)."""
    if os.environ.get("PYTHONHASHSEED") == FIXED:
        return
    os.environ["PYTHONHASHSEED"] = FIXED
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "broker_sim", *arguments])

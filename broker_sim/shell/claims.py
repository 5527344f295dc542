"""`--claim-broker-ids DIR`: replicas of one fleet command (`docker compose up --scale fleet=3`) each
claim a slot of their own, so that each drives distinct broker ids and topics.

A replica cannot be told its index by its orchestrator, but the replicas can share a directory: each
takes the lowest free slot k by creating `DIR/slot-k` exclusively, and the command line turns k into
its broker ids, seed and paths (`broker_sim.cli`).

Rules:
- A slot is taken by creating `DIR/slot-<k>` with O_CREAT | O_EXCL: the filesystem lets exactly one
  creator win each name, across threads, processes and containers sharing the directory (a local
  filesystem or a volume; not NFS before v3). The holder's name (the hostname) is then written in it.
- A holder that already has a slot gets it back (the lowest, if it somehow has several): a
  restarted container keeps its hostname, so it drives the same brokers again, as new incarnations.
- Slots are never released: a holder that stops may come back, and the controller's log still
  holds its brokers. Emptying the directory (with the controller's data) starts the numbering anew.
- A holder that died between creating its slot and writing its name leaves a slot nobody holds; it
  is skipped for ever, which costs a range of broker ids and nothing else.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

SLOT_FILE = re.compile(r"slot-(\d+)")


def slot_path(directory: Path, slot: int) -> Path:
    return directory / f"slot-{slot}"


def held_slot(directory: Path, holder: str) -> int | None:
    """The lowest slot whose file names `holder`, if any."""
    held = []
    for path in directory.iterdir():
        match = SLOT_FILE.fullmatch(path.name)
        if match is not None and path.read_text().strip() == holder:
            held.append(int(match.group(1)))
    return min(held, default=None)


def claim_slot(directory: Path, holder: str | None = None) -> int:
    """`holder`'s slot in `directory` (created if missing): the one it holds, else the lowest free one.

    `holder` defaults to this host's name. Raises OSError when the directory cannot be used."""
    holder = holder or socket.gethostname()
    directory.mkdir(parents=True, exist_ok=True)
    held = held_slot(directory, holder)
    if held is not None:
        return held
    slot = 0
    while True:
        try:
            descriptor = os.open(slot_path(directory, slot), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            slot += 1
            continue
        with os.fdopen(descriptor, "w") as file:
            file.write(f"{holder}\n")
        return slot

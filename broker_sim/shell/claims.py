"""`--claim-broker-ids DIR`: replicas of one fleet command (`docker compose up --scale fleet=3`) each
claim a slot of their own, so that each drives distinct broker ids and topics.

A replica cannot be told its index by its orchestrator, but the replicas can share a directory: each
takes the lowest free slot k by creating `DIR/slot-k` exclusively, and the command line turns k into
its broker ids, seed and paths (`broker_sim.cli`).

Rules:
- A slot is taken by creating `DIR/slot-<k>` with O_CREAT | O_EXCL: the filesystem lets exactly one
  creator win each name, across threads, processes and containers sharing the directory (a local
  filesystem or a volume; not NFS before v3). The claimer's name (the hostname) is then written in
  it, to tell who took which slot.
- Every run takes a new slot, a restarted container too: run again with the ids and seed of an
  earlier run against the same controller, the brokers would register the same incarnation ids
  (they are seeded), which the controller rightly takes for the earlier, fenced incarnations, and
  the final check would hold the new run's journal to the earlier run's part of the log. Both show
  as violations of a correct controller (bad-answer, control-delivery: seen on a restarted compose
  fleet). New ids and a new seed have no history.
- Slots are never released, since the controller's log keeps every broker that ran. Emptying the
  directory with the controller's data starts the numbering anew.
- A claimer that died between creating its slot and writing its name leaves its slot nameless; it
  stays taken, which costs a range of broker ids and nothing else.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def slot_path(directory: Path, slot: int) -> Path:
    return directory / f"slot-{slot}"


def claim_slot(directory: Path, claimer: str | None = None) -> int:
    """The lowest free slot of `directory` (created if missing), now taken in `claimer`'s name (by
    default this host's). Raises OSError when the directory cannot be used."""
    claimer = claimer or socket.gethostname()
    directory.mkdir(parents=True, exist_ok=True)
    slot = 0
    while True:
        try:
            descriptor = os.open(slot_path(directory, slot), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            slot += 1
            continue
        with os.fdopen(descriptor, "w") as file:
            file.write(f"{claimer}\n")
        return slot

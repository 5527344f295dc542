"""What only a simulation may hold a controller quorum to, checked on a seed's journal.

Rules:
- `sim-election-without-fault`: a quorum whose leader is healthy keeps it. On a wall clock a
  starved machine may delay a leader's fetch answers past the timeout and so depose it; in the
  simulation no task is ever late, the network delays by milliseconds and nothing is lost but
  by a fault, so every epoch after the first leader's follows a controller fault: the fleet saw
  (`QuorumLeaderSeen`) a leader of a newer epoch no earlier than the first fault's start and
  no later than `DEPOSED_SLACK` deposition times (`QuorumTiming.deposed_s`: 1.5 fetch timeouts
  and 2 election timeouts) after the end of the last fault that began before it. A follower whose
  fetch timer is never reset, or a leader that stops answering fetches, breaks it.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker_sim.journal import ControllerFaulted, Entry, QuorumLeaderSeen, QuorumStarted
from broker_sim.model.quorum import QuorumTiming

from .cluster import EPOCH_NS

NS_PER_S = 1_000_000_000
#: how many deposition times after a fault's end a new epoch may still come from it
DEPOSED_SLACK = 2.0


def elections_without_fault(entries: Iterable[Entry]) -> list[str]:
    """The violations of `sim-election-without-fault` in a seed's journal (see the rules)."""
    timing: QuorumTiming | None = None
    window_end_ns: int | None = None  # the newest fault's reach (None: no fault yet)
    epoch: int | None = None  # the newest epoch seen
    found: list[str] = []
    for entry in entries:
        if isinstance(entry, QuorumStarted):
            timing = QuorumTiming(entry.election_timeout_ms / 1000, entry.fetch_timeout_ms / 1000)
        elif isinstance(entry, ControllerFaulted) and timing is not None:
            reach_s = entry.duration_ms / 1000 + DEPOSED_SLACK * timing.deposed_s
            window_end_ns = max(window_end_ns or 0, entry.wall_ns + int(reach_s * NS_PER_S))
        elif isinstance(entry, QuorumLeaderSeen):
            newer = epoch is not None and entry.leader_epoch > epoch
            if newer and (window_end_ns is None or entry.wall_ns > window_end_ns):
                found.append(
                    f"[sim-election-without-fault] node {entry.node} led epoch {entry.leader_epoch} "
                    f"(after {epoch}) with no controller fault in reach"
                    + ("" if window_end_ns is None else f" (the last reached {_at(window_end_ns)})")
                    + f", seen at {_at(entry.wall_ns)}"
                )
            epoch = entry.leader_epoch if epoch is None else max(epoch, entry.leader_epoch)
    return found


def _at(wall_ns: int) -> str:
    """A journal time as the simulation's seconds (its wall clock starts at `cluster.EPOCH_NS`)."""
    return f"{(wall_ns - EPOCH_NS) / NS_PER_S:.3f} s"

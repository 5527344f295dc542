"""The pacing of a broker's request probes (`probes`): which kind it builds next, when, and which
answered probe goes again; with the dispatch from a kind to the module that builds it.

Rules:
- Chaos only (`RequestProbes`): each broker one probe per `gap_for` its fleet process's
  broker count (`PROBE_GAP_S`, longer in a large fleet: at most `PROBES_PER_S` a second in all,
  so that the probes never weigh on a benchmark's load), the kinds in a cycle of the
  `probes.KINDS` order rotated by a seeded offset per broker (so that brokers probing at the same
  time probe different rows), a kind it cannot build now skipped for the next. Its randomness is
  its own seeded `random.Random`, so the broker's other draws are untouched.
- An answer that judged nothing (`probes.judges_nothing`) sends the probe again, first, after a
  backoff (`RequestProbes.again`), unless the incarnation ended meanwhile (its epoch is gone) or
  `MAX_NOT_JUDGED` answers in a row said so.
"""

from __future__ import annotations

import random

from . import alter_partition_probes, lifecycle_probes, replica_state_probes
from .probes import KINDS, Builder, Knowledge, ProbePlan

PROBE_GAP_S = 1.0
PROBES_PER_S = 10.0
MAX_NOT_JUDGED = 5

_BUILDERS: dict[str, Builder] = {
    **alter_partition_probes.BUILDERS,
    **lifecycle_probes.BUILDERS,
    **replica_state_probes.BUILDERS,
}


def build(kind: str, rng: random.Random, known: Knowledge) -> ProbePlan | None:
    """A probe of `kind` from what the broker knows, or None when it cannot build one now."""
    return _BUILDERS[kind](kind, rng, known)


def gap_for(brokers: int) -> float:
    """Each broker's time between probes in a fleet process of `brokers` brokers."""
    return max(PROBE_GAP_S, brokers / PROBES_PER_S)


class RequestProbes:
    """A broker's request probes: which kind comes next, when, and one answered NOT_CONTROLLER
    waiting to go again (see the module rules)."""

    def __init__(self, enabled: bool, seed: int, broker_id: int, gap_s: float = PROBE_GAP_S) -> None:
        self.enabled = enabled
        self.gap_s = gap_s
        self.rng = random.Random(f"{seed}:{broker_id}:request-probes")
        self.position = self.rng.randrange(len(KINDS))
        self.next_at = 0.0
        self.pending: ProbePlan | None = None  # answered NOT_CONTROLLER: sent again first
        self.not_judged = 0

    def due(self, t: float) -> bool:
        return self.enabled and t >= self.next_at

    def take(self, t: float, known: Knowledge) -> ProbePlan | None:
        """The probe to send at `t` (the next one is due `gap_s` later), or None."""
        self.next_at = t + self.gap_s
        pending, self.pending = self.pending, None
        if pending is not None:
            return pending
        for _ in range(len(KINDS)):
            kind = KINDS[self.position % len(KINDS)]
            self.position += 1
            plan = build(kind, self.rng, known)
            if plan is not None:
                return plan
        return None

    def again(self, plan: ProbePlan, retry_at: float) -> None:
        """`plan` was answered NOT_CONTROLLER: it goes again first, not before `retry_at`."""
        self.not_judged += 1
        self.pending = plan if self.not_judged < MAX_NOT_JUDGED else None
        self.next_at = retry_at

    def judged(self) -> None:
        self.not_judged = 0

    def new_incarnation(self) -> None:
        """A probe built with the ended incarnation's epoch is no longer right: dropped."""
        self.pending = None
        self.not_judged = 0

"""Resends: the controller does not send again a request a broker refused as stale (semantics.md,
"StopReplica and LeaderAndIsr": "The controller does not resend a request rejected as stale; it logs
and counts it"), judged from the brokers' listeners' journal alone.

Rules (ids in violations.RULES):
- `stale-resent`: a LeaderAndIsr or StopReplica refused whole as stale (STALE_BROKER_EPOCH or
  STALE_CONTROLLER_EPOCH: `ControlRefused`) is never received again, with identical content (the
  digest of its decoded body: controller epoch, broker epoch, type, every partition), on the same
  connection of the same broker. A resend is refused again (a broker's epoch and the newest
  controller epoch it saw only grow), so the journal's refusals hold every resend.
- Not a resend: the same partitions at a newer controller or broker epoch (a FULL LeaderAndIsr
  to a new registration carries its new broker epoch), other content, or the same request on
  another connection: the controller re-sends the requests it has not seen answered after a
  connection fails or times out, and the refusal's answer may have been lost with it. On one
  connection the broker answers in order, each answer written before the next request is read.
- A refusal without a digest or connection (an older journal) is not judged, counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from broker_sim.journal import ControlRefused, Entry
from protocol.error_codes import ErrorCode

from .events import LogEnd, Subscriber
from .rendering import render_entry
from .rules import LogRules
from .violations import Violation

STALE = frozenset({ErrorCode.STALE_BROKER_EPOCH, ErrorCode.STALE_CONTROLLER_EPOCH})


class Resends(Subscriber):
    """See the module rules."""

    name = "resends"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.image = image
        self.refused: dict[tuple[int, int, str, int, int, str], ControlRefused] = {}
        self.judged = 0
        self.undigested: Counter[str] = Counter()

    def on_journal_entry(self, entry: Entry) -> None:
        if not isinstance(entry, ControlRefused) or entry.error not in STALE:
            return
        if not entry.digest or not entry.connection:
            self.undigested["control_refused"] += 1
            return
        self.judged += 1
        key = (
            entry.broker,
            entry.connection,
            entry.api,
            entry.controller_epoch,
            entry.request_broker_epoch,
            entry.digest,
        )
        first = self.refused.setdefault(key, entry)
        if first is not entry and not self.sink.count_only("stale-resent"):
            self.sink.add(
                Violation(
                    "stale-resent",
                    f"broker {entry.broker} refused a {entry.api} (controller epoch {entry.controller_epoch}, broker "
                    f"epoch {entry.request_broker_epoch}) as stale ({ErrorCode(first.error).name}), and the same "
                    "request came again on the same connection",
                    journal=render_entry(entry),
                    broker=entry.broker,
                    records=(f"first refused: {render_entry(first)}",),
                )
            )

    def on_log_end(self, end: LogEnd) -> None:
        self.refused.clear()

    def counts(self) -> Mapping[str, int]:
        return {"judged stale-resent": self.judged} if self.judged else {}

    def unverifiable(self) -> Mapping[str, int]:
        return self.undigested

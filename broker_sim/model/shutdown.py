"""A broker's controlled shutdown in progress: which way it goes, when to ask again, how it ends.

Rules:
- `via` "rpc": ControlledShutdown until RemainingPartitions is empty; "heartbeat": WantShutDown
  until ShouldShutDown; "rpc+heartbeat": the RPC first, then the heartbeat.
- The RPC is retried every `retry_s` after an error, a non-empty RemainingPartitions, or a
  failed exchange; each send counts an attempt.
- It ends done (the broker's incarnation then ends), or unfinished once `bound_s` has passed
  since it began (or the broker crashed): `ended` is the event either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.error_codes import ErrorCode
from protocol.messages.controlled_shutdown import ControlledShutdownResponse

from .events import ShutdownEnded

VIAS = ("rpc", "heartbeat", "rpc+heartbeat")


@dataclass(slots=True)
class Shutdown:
    via: str
    started: float
    rpc_pending: bool
    retry_at: float
    attempts: int = 0

    @classmethod
    def begin(cls, via: str, t: float) -> Shutdown:
        return cls(via=via, started=t, rpc_pending=via != "heartbeat", retry_at=t)

    @property
    def by_heartbeat_only(self) -> bool:
        return self.via == "heartbeat"

    def over_bound(self, t: float, bound_s: float) -> bool:
        return t - self.started > bound_s

    def rpc_due(self, t: float) -> bool:
        """Send the ControlledShutdown RPC now? (counts an attempt when it is)"""
        if self.rpc_pending and t >= self.retry_at:
            self.attempts += 1
            return True
        return False

    def rpc_answered(self, response: ControlledShutdownResponse, t: float, retry_s: float) -> bool:
        """True once the RPC's part is done (nothing remains); else it is asked again after `retry_s`."""
        if response.error_code != ErrorCode.NONE or response.remaining_partitions:
            self.retry_at = t + retry_s
            return False
        self.rpc_pending = False
        return True

    def rpc_failed(self, t: float, retry_s: float) -> None:
        self.retry_at = t + retry_s

    def ended(self, epoch: int, version: int, finished: float | None) -> ShutdownEnded:
        return ShutdownEnded(epoch, self.via, version, self.started, finished, max(1, self.attempts))

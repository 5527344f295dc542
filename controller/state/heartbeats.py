"""Heartbeat soft state: when each broker was last heard from. Never enters the log.

Times are monotonic nanoseconds passed in by the caller. A session is valid while the broker is
unfenced and was heard from within the session timeout (Kafka's `hasValidSession`). After a
controller restart every registered broker gets a fresh session from the moment the new
controller epoch opens (`adopt`, called by `ControllerCore.start_sessions`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class HeartbeatTracker:
    session_timeout_ns: int
    last_contact_ns: dict[int, int] = field(default_factory=dict)
    metadata_offset: dict[int, int] = field(default_factory=dict)

    def touch(self, broker_id: int, now_ns: int, metadata_offset: int | None = None) -> None:
        self.last_contact_ns[broker_id] = now_ns
        if metadata_offset is not None:
            self.metadata_offset[broker_id] = metadata_offset

    def forget(self, broker_id: int) -> None:
        self.last_contact_ns.pop(broker_id, None)
        self.metadata_offset.pop(broker_id, None)

    def adopt(self, broker_ids: list[int], now_ns: int) -> None:
        """Give every broker not yet tracked a full session from now (controller start)."""
        for broker_id in broker_ids:
            self.last_contact_ns.setdefault(broker_id, now_ns)

    def session_alive(self, broker_id: int, now_ns: int) -> bool:
        last = self.last_contact_ns.get(broker_id)
        return last is not None and last + self.session_timeout_ns >= now_ns

    def expired(self, candidates: list[int], now_ns: int) -> list[int]:
        """Of the given (unfenced) brokers, those whose session ran out, oldest contact first."""
        late = [b for b in candidates if not self.session_alive(b, now_ns)]
        return sorted(late, key=lambda b: (self.last_contact_ns.get(b, -1), b))

    def next_deadline_ns(self, candidates: list[int]) -> int | None:
        """When the earliest of these sessions runs out, if any is tracked."""
        times = [self.last_contact_ns[b] for b in candidates if b in self.last_contact_ns]
        return min(times) + self.session_timeout_ns if times else None

"""Brokers: registrations, epochs, fenced and controlled-shutdown flags (Kafka's ClusterControlManager).

Rules:
- The broker epoch of an incarnation is the log offset of its RegisterBrokerRecord, and is also
  the offset a broker must have caught up to before it may be unfenced. (Kafka also moves that
  offset when the same incarnation registers again; fencer keeps the epoch's, so that the state
  is exactly what a snapshot can carry.)
- `replay` is the only mutation. A change record whose epoch is not the registered one is a
  corrupt log (Kafka refuses to replay it too), reported as `ReplayError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.records.metadata import (
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)

from .model import BrokerRegistration, Endpoint


class ReplayError(Exception):
    """A record that cannot apply to the current state: the log is not one this state machine wrote."""


@dataclass
class ClusterState:
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)

    # ------------------------------------------------------------------ queries
    def get(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def is_active(self, broker_id: int) -> bool:
        broker = self.brokers.get(broker_id)
        return broker is not None and broker.active

    def epoch_matches(self, broker_id: int, epoch: int) -> bool:
        broker = self.brokers.get(broker_id)
        return broker is not None and broker.epoch == epoch

    def unfenced_ids(self) -> list[int]:
        return sorted(b for b, reg in self.brokers.items() if not reg.fenced)

    def active_ids(self) -> list[int]:
        return sorted(b for b, reg in self.brokers.items() if reg.active)

    # ------------------------------------------------------------------ replay
    def replay_register(self, record: RegisterBrokerRecord) -> None:
        self.brokers[record.broker_id] = BrokerRegistration(
            broker_id=record.broker_id,
            epoch=record.broker_epoch,
            incarnation_id=record.incarnation_id,
            listeners=tuple(Endpoint(e.name, e.host, e.port, e.security_protocol) for e in record.end_points),
            rack=record.rack or None,  # Kafka clients send "" or null for "no rack"
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
            log_dirs=record.log_dirs,
        )

    def replay_change(self, record: BrokerRegistrationChangeRecord) -> None:
        broker = self._expect(record.broker_id, record.broker_epoch)
        changes: dict[str, object] = {}
        if record.fenced == 1:
            changes["fenced"] = True
        elif record.fenced == -1:
            changes["fenced"] = False
        if record.in_controlled_shutdown == 1:
            changes["in_controlled_shutdown"] = True
        if record.log_dirs:
            changes["log_dirs"] = record.log_dirs
        self.brokers[record.broker_id] = broker.with_changes(**changes)

    def replay_fence(self, record: FenceBrokerRecord | UnfenceBrokerRecord) -> None:
        broker = self._expect(record.id, record.epoch)
        self.brokers[record.id] = broker.with_changes(fenced=isinstance(record, FenceBrokerRecord))

    def replay_unregister(self, record: UnregisterBrokerRecord) -> None:
        self._expect(record.broker_id, record.broker_epoch)
        del self.brokers[record.broker_id]

    def _expect(self, broker_id: int, epoch: int) -> BrokerRegistration:
        broker = self.brokers.get(broker_id)
        if broker is None or broker.epoch != epoch:
            raise ReplayError(f"no registration of broker {broker_id} with epoch {epoch}")
        return broker

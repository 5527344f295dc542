"""What a snapshot holds: the records that rebuild the durable state from a frozen copy of it.

Rules: `snapshot_records` is the one definition of a snapshot's content: every broker
registration (by id), then every topic (by name) followed by its partitions (by index), each
record at the version `controller.ops.changes.record_version` chooses. Records are built as they
are consumed, so a snapshot of a large state never holds all of them at once; it reads only the
frozen state, so it may run in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator

from protocol.records.metadata import RegisterBrokerRecord, RegisterBrokerRecordBrokerEndpoint, TopicRecord

from ..state.controller_state import RecordAndVersion
from ..state.frozen import FrozenState
from ..state.model import BrokerRegistration
from .changes import versioned


def snapshot_records(frozen: FrozenState) -> Iterator[RecordAndVersion]:
    """Records that rebuild the durable state: brokers, then topics with their partitions (built
    as they are consumed, so a snapshot of a large state never holds all of them at once)."""
    for broker_id in sorted(frozen.brokers):
        yield versioned(_register_record(frozen.brokers[broker_id]))
    for topic in frozen.sorted_topics():
        yield versioned(TopicRecord(name=topic.name, topic_id=topic.topic_id))
        for index, part in sorted(topic.partitions.items()):
            yield versioned(part.to_record(topic.topic_id, index))


def _register_record(broker: BrokerRegistration) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker.broker_id,
        incarnation_id=broker.incarnation_id,
        broker_epoch=broker.epoch,
        end_points=tuple(
            RegisterBrokerRecordBrokerEndpoint(
                name=endpoint.name, host=endpoint.host, port=endpoint.port, security_protocol=endpoint.security_protocol
            )
            for endpoint in broker.listeners
        ),
        rack=broker.rack,
        fenced=broker.fenced,
        in_controlled_shutdown=broker.in_controlled_shutdown,
        log_dirs=broker.log_dirs,
    )

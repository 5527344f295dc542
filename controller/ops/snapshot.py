"""What a snapshot holds: the records that rebuild the durable state from a frozen copy of it.

Rules: `snapshot_records` is the one definition of a snapshot's content, in the order of Kafka's
MetadataImage.write: the feature levels (metadata.version first, as Kafka writes it, then by
name) and the ZooKeeper migration state (if the log had one), every broker registration (by id)
and controller registration (by id), every topic (by name) followed by its partitions (by
index), then the configs (by resource), client quotas (by entity), the producer id block, ACLs
(by id), SCRAM credentials (by user and mechanism) and delegation tokens (by id); each record at
the version `controller.ops.changes.record_version` chooses. Records are built as they
are consumed, so a snapshot of a large state never holds all of them at once; it reads only the
frozen state, so it may run in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator

from protocol.records.metadata import (
    ClientQuotaRecord,
    ClientQuotaRecordEntityData,
    ConfigRecord,
    FeatureLevelRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    TopicRecord,
    ZkMigrationStateRecord,
)

from ..state.controller_state import RecordAndVersion
from ..state.frozen import FrozenState
from ..state.kept import METADATA_VERSION
from ..state.model import BrokerRegistration
from .changes import versioned


def snapshot_records(frozen: FrozenState) -> Iterator[RecordAndVersion]:
    """Records that rebuild the durable state, in the module's order (built as they are consumed,
    so a snapshot of a large state never holds all of them at once)."""
    kept = frozen.kept
    for name in sorted(kept.features, key=lambda name: (name != METADATA_VERSION, name)):
        yield versioned(FeatureLevelRecord(name=name, feature_level=kept.features[name]))
    if kept.zk_migration_state is not None:
        yield versioned(ZkMigrationStateRecord(zk_migration_state=kept.zk_migration_state))
    for broker_id in sorted(frozen.brokers):
        yield versioned(_register_record(frozen.brokers[broker_id]))
    for controller_id in sorted(kept.controllers):
        yield versioned(kept.controllers[controller_id])
    for topic in frozen.sorted_topics():
        yield versioned(TopicRecord(name=topic.name, topic_id=topic.topic_id))
        for index, part in sorted(topic.partitions.items()):
            yield versioned(part.to_record(topic.topic_id, index))
    for resource in sorted(kept.configs):
        resource_type, resource_name = resource
        for key, value in sorted(kept.configs[resource].items()):
            yield versioned(
                ConfigRecord(resource_type=resource_type, resource_name=resource_name, name=key, value=value)
            )
    for entity in sorted(kept.quotas, key=_entity_order):
        parts = tuple(ClientQuotaRecordEntityData(entity_type=kind, entity_name=name) for kind, name in entity)
        for key, quota in sorted(kept.quotas[entity].items()):
            yield versioned(ClientQuotaRecord(entity=parts, key=key, value=quota))
    if kept.producer_ids is not None:
        block = kept.producer_ids
        yield versioned(
            ProducerIdsRecord(
                broker_id=block.broker_id, broker_epoch=block.broker_epoch, next_producer_id=block.next_producer_id
            )
        )
    for acl_id in sorted(kept.acls):
        yield versioned(kept.acls[acl_id])
    for credential in sorted(kept.scram):
        yield versioned(kept.scram[credential])
    for token_id in sorted(kept.tokens):
        yield versioned(kept.tokens[token_id])


def _entity_order(entity: tuple[tuple[str, str | None], ...]) -> tuple[tuple[str, bool, str], ...]:
    """Quota entities sorted with their default (None) names first."""
    return tuple((kind, name is not None, name or "") for kind, name in entity)


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

"""Replay of the Kafka 3.9 record types: every record type has a replayer; those the
state keeps (controller.state.kept) change it; only markers, NoOp, snapshot framing, the KRaft
version and the voters are read and ignored by the core (which records a transaction lets take
effect is start-up replay's: tests/controller/test_transactions.py)."""

from __future__ import annotations

import uuid

import pytest

from controller.core import ControllerCore
from protocol.records.control import (
    CONTROL_RECORD_TYPES,
    KRaftVersionRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)
from protocol.records.metadata import (
    METADATA_RECORD_TYPES,
    AbortTransactionRecord,
    AccessControlEntryRecord,
    BeginTransactionRecord,
    ClientQuotaRecord,
    ClientQuotaRecordEntityData,
    ConfigRecord,
    DelegationTokenRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    NoOpRecord,
    ProducerIdsRecord,
    RegisterControllerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
    ZkMigrationStateRecord,
)
from protocol.spec import Data
from tests.controller.harness import Harness

ACTED_ON = {
    "RegisterBrokerRecord",
    "UnregisterBrokerRecord",
    "TopicRecord",
    "PartitionRecord",
    "PartitionChangeRecord",
    "FenceBrokerRecord",
    "UnfenceBrokerRecord",
    "RemoveTopicRecord",
    "BrokerRegistrationChangeRecord",
    "LeaderChangeMessage",
}
IGNORED = [
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    NoOpRecord,
    SnapshotHeaderRecord,
    SnapshotFooterRecord,
    KRaftVersionRecord,
    VotersRecord,
]
ACL = uuid.UUID(int=7)
USER_QUOTA = (ClientQuotaRecordEntityData(entity_type="user", entity_name="alice"),)
#: a record of each type the state keeps, and one that undoes it where there is one
KEPT: list[tuple[Data, Data | None]] = [
    (ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="1"), None),
    (FeatureLevelRecord(name="metadata.version", feature_level=21), None),
    (AccessControlEntryRecord(id=ACL, resource_name="t", principal="User:a"), RemoveAccessControlEntryRecord(id=ACL)),
    (ClientQuotaRecord(entity=USER_QUOTA, key="producer_byte_rate", value=1024.0), None),
    (
        UserScramCredentialRecord(name="alice", mechanism=1, salt=b"s"),
        RemoveUserScramCredentialRecord(name="alice", mechanism=1),
    ),
    (DelegationTokenRecord(token_id="tok", owner="User:a"), RemoveDelegationTokenRecord(token_id="tok")),
    (ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=1000), None),
    (RegisterControllerRecord(controller_id=3000, incarnation_id=uuid.UUID(int=1)), None),
    (ZkMigrationStateRecord(zk_migration_state=0), None),
]


def test_every_record_type_has_a_replayer_and_each_is_acted_on_kept_or_ignored() -> None:
    every = {*METADATA_RECORD_TYPES.values(), *CONTROL_RECORD_TYPES.values()}
    assert every <= set(Harness().core._replayers)
    kept = {type(r) for r, _ in KEPT} | {type(u) for _, u in KEPT if u is not None}
    named = {cls.__name__ for cls in (*IGNORED, *kept)} | ACTED_ON
    assert named == {cls.__name__ for cls in every}


@pytest.mark.parametrize("cls", IGNORED, ids=lambda cls: cls.__name__)
def test_record_types_the_state_does_not_act_on_are_ignored(cls: type) -> None:
    core: ControllerCore = Harness().core
    before = core.durable_view()
    counts = core.counts()._replace(last_offset=41)
    assert core.replay(cls(), 41) is None
    assert core.state.last_offset == 41
    assert core.counts() == counts
    assert core.durable_view() == before


@pytest.mark.parametrize(("record", "undo"), KEPT, ids=lambda r: type(r).__name__)
def test_record_types_the_state_keeps_change_it(record: Data, undo: Data | None) -> None:
    core: ControllerCore = Harness().core
    before = core.durable_view()
    assert core.replay(record, 1) is None
    assert core.state.last_offset == 1
    changed = core.durable_view()
    assert changed != before
    if undo is not None:
        core.replay(undo, 2)
        assert core.durable_view() == before

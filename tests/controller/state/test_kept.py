"""What the state keeps without acting on it (controller.state.kept): Kafka's replay semantics,
snapshots that lose none of it, and a /state that shows it without secrets."""

from __future__ import annotations

import json
import uuid

import pytest

from controller.ops.snapshot import snapshot_records
from controller.server.state_json import state_json, state_json_pieces
from controller.state.cluster import ReplayError
from controller.state.kept import ProducerIdBlock
from protocol.records.control import LeaderChangeMessage
from protocol.records.metadata import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ClientQuotaRecordEntityData,
    ConfigRecord,
    DelegationTokenRecord,
    FeatureLevelRecord,
    ProducerIdsRecord,
    RegisterControllerRecord,
    RegisterControllerRecordControllerEndpoint,
    RegisterControllerRecordControllerFeature,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UserScramCredentialRecord,
    ZkMigrationStateRecord,
)
from protocol.records.metadata_value import decode_metadata_value, encode_metadata_value
from protocol.spec import Data

from ..harness import Harness

SECRET_SALT = b"salt-never-shown"
SECRET_KEY = b"key-never-shown"


def replay_all(h: Harness, records: list[Data]) -> None:
    for record in records:
        h.core.replay(record, h.core.state.last_offset + 1)


def one_of_each() -> list[Data]:
    alice = (ClientQuotaRecordEntityData(entity_type="user", entity_name="alice"),)
    default_client = (
        ClientQuotaRecordEntityData(entity_type="user", entity_name=None),
        ClientQuotaRecordEntityData(entity_type="client-id", entity_name="app"),
    )
    return [
        FeatureLevelRecord(name="kraft.version", feature_level=1),
        FeatureLevelRecord(name="metadata.version", feature_level=21),
        ZkMigrationStateRecord(zk_migration_state=0),
        RegisterControllerRecord(
            controller_id=3000,
            incarnation_id=uuid.UUID(int=9),
            end_points=(RegisterControllerRecordControllerEndpoint(name="CONTROLLER", host="h", port=9093),),
            features=(RegisterControllerRecordControllerFeature(name="metadata.version", max_supported_version=21),),
        ),
        ConfigRecord(resource_type=2, resource_name="a", name="retention.ms", value="1000"),
        ConfigRecord(resource_type=2, resource_name="a", name="cleanup.policy", value="compact"),
        ConfigRecord(resource_type=4, resource_name="", name="log.retention.ms", value="5"),
        ConfigRecord(resource_type=4, resource_name="1", name="num.io.threads", value="4"),
        ClientQuotaRecord(entity=alice, key="producer_byte_rate", value=1024.0),
        ClientQuotaRecord(entity=default_client, key="request_percentage", value=50.0),
        ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=1000),
        ProducerIdsRecord(broker_id=2, broker_epoch=7, next_producer_id=2000),
        AccessControlEntryRecord(
            id=uuid.UUID(int=2),
            resource_type=2,
            resource_name="a",
            pattern_type=3,
            principal="User:alice",
            host="*",
            operation=3,
            permission_type=3,
        ),
        AccessControlEntryRecord(
            id=uuid.UUID(int=1), resource_type=4, resource_name="kafka-cluster", principal="User:bob"
        ),
        UserScramCredentialRecord(
            name="alice", mechanism=1, salt=SECRET_SALT, stored_key=SECRET_KEY, server_key=SECRET_KEY, iterations=4096
        ),
        UserScramCredentialRecord(name="alice", mechanism=2, salt=SECRET_SALT, stored_key=SECRET_KEY, iterations=8192),
        DelegationTokenRecord(
            owner="User:alice",
            requester="User:alice",
            renewers=("User:bob",),
            issue_timestamp=1,
            max_timestamp=3,
            expiration_timestamp=2,
            token_id="token-1",
        ),
    ]


def adopted() -> Harness:
    """A cluster whose log holds one of each record type the state keeps (as an adopted Kafka log would)."""
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("a", partitions=2)
    replay_all(h, one_of_each())
    return h


def test_a_snapshot_loses_nothing_the_state_keeps() -> None:
    h = adopted()
    records = h.core.snapshot_records()
    fresh = Harness()
    replay_all(fresh, [record for record, _ in records])
    assert fresh.core.durable_view() == h.core.durable_view()
    assert fresh.core.state.kept.frozen() == h.core.state.kept.frozen()
    assert fresh.core.snapshot_records() == records
    for record, version in records:  # every record is written at a version the codec encodes
        assert decode_metadata_value(encode_metadata_value(record, version)) == (record, version)


def test_a_snapshot_writes_features_first_metadata_version_leading_then_kafkas_order() -> None:
    names = [type(record).__name__ for record, _ in adopted().core.snapshot_records()]
    first = names.index
    assert names[:2] == ["FeatureLevelRecord", "FeatureLevelRecord"]
    records = adopted().core.snapshot_records()
    assert records[0][0] == FeatureLevelRecord(name="metadata.version", feature_level=21)
    order = [
        "ZkMigrationStateRecord",
        "RegisterBrokerRecord",
        "RegisterControllerRecord",
        "TopicRecord",
        "ConfigRecord",
        "ClientQuotaRecord",
        "ProducerIdsRecord",
        "AccessControlEntryRecord",
        "UserScramCredentialRecord",
        "DelegationTokenRecord",
    ]
    assert [first(name) for name in order] == sorted(first(name) for name in order)


def test_a_fresh_cluster_snapshot_holds_none_of_it() -> None:
    h = Harness()
    h.start_brokers(1)
    kinds = {type(record).__name__ for record, _ in h.core.snapshot_records()}
    assert kinds == {"RegisterBrokerRecord"}


def test_a_null_config_value_deletes_the_key_and_an_empty_resource_is_forgotten() -> None:
    h = adopted()
    replay_all(h, [ConfigRecord(resource_type=2, resource_name="a", name="retention.ms", value=None)])
    assert h.core.state.kept.configs[(2, "a")] == {"cleanup.policy": "compact"}
    replay_all(h, [ConfigRecord(resource_type=2, resource_name="a", name="cleanup.policy", value=None)])
    assert (2, "a") not in h.core.state.kept.configs
    replay_all(h, [ConfigRecord(resource_type=2, resource_name="a", name="absent", value=None)])  # nothing
    assert (2, "a") not in h.core.state.kept.configs


def test_removing_a_topic_drops_its_configs_only() -> None:
    h = adopted()
    replay_all(h, [RemoveTopicRecord(topic_id=h.topic_id("a"))])
    assert set(h.core.state.kept.configs) == {(4, ""), (4, "1")}
    # a topic of the same name created again starts with no configs
    replay_all(h, [TopicRecord(name="a", topic_id=uuid.UUID(int=77))])
    assert (2, "a") not in h.core.state.kept.configs


def test_feature_level_zero_removes_a_feature_but_metadata_version_has_none() -> None:
    h = adopted()
    replay_all(h, [FeatureLevelRecord(name="kraft.version", feature_level=0)])
    assert h.core.state.kept.features == {"metadata.version": 21}
    with pytest.raises(ReplayError, match=r"metadata\.version"):
        replay_all(h, [FeatureLevelRecord(name="metadata.version", feature_level=0)])


def test_a_quota_removed_is_gone_and_an_entity_without_quotas_is_forgotten() -> None:
    h = adopted()
    (alice,) = [e for e in h.core.state.kept.quotas if e == (("user", "alice"),)]
    record = ClientQuotaRecord(
        entity=(ClientQuotaRecordEntityData(entity_type="user", entity_name="alice"),),
        key="producer_byte_rate",
        remove=True,
    )
    replay_all(h, [record])
    assert alice not in h.core.state.kept.quotas


def test_removals_of_what_is_not_there() -> None:
    h = adopted()
    with pytest.raises(ReplayError, match="ACL"):
        replay_all(h, [RemoveAccessControlEntryRecord(id=uuid.UUID(int=99))])
    with pytest.raises(ReplayError, match="SCRAM"):
        replay_all(h, [RemoveUserScramCredentialRecord(name="alice", mechanism=3)])
    before = h.core.durable_view()
    replay_all(h, [RemoveDelegationTokenRecord(token_id="unknown")])  # as Kafka: nothing
    assert h.core.durable_view() == before
    replay_all(
        h, [RemoveDelegationTokenRecord(token_id="token-1"), RemoveAccessControlEntryRecord(id=uuid.UUID(int=1))]
    )
    assert not h.core.state.kept.tokens
    assert set(h.core.state.kept.acls) == {uuid.UUID(int=2)}


def test_producer_ids_keep_the_latest_block_and_only_move_forward() -> None:
    h = adopted()
    assert h.core.state.kept.producer_ids == ProducerIdBlock(broker_id=2, broker_epoch=7, next_producer_id=2000)
    with pytest.raises(ReplayError, match="not greater"):
        replay_all(h, [ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=2000)])


def test_a_freeze_reuses_the_kept_copy_until_a_replay_changes_it() -> None:
    h = adopted()
    first = h.core.freeze().kept
    h.alter_isr("a", 0, [h.partition("a", 0).leader])
    replay_all(h, [LeaderChangeMessage(leader_id=3000)])
    assert h.core.freeze().kept is first
    replay_all(h, [ConfigRecord(resource_type=2, resource_name="a", name="x", value="y")])
    second = h.core.freeze().kept
    assert second is not first and "x" not in first.configs[(2, "a")] and second.configs[(2, "a")]["x"] == "y"
    assert list(snapshot_records(h.core.freeze())) == h.core.snapshot_records()


def test_state_shows_what_is_kept_and_no_secret() -> None:
    h = adopted()
    text = "".join(state_json_pieces(h.core.freeze(), 1))
    assert json.loads(text) == state_json(h.core)
    for secret in (SECRET_SALT, SECRET_KEY):
        assert secret.decode() not in text
    assert "iterations" not in text and "4096" not in text
    state = state_json(h.core)
    assert state["features"] == {"kraft.version": 1, "metadata.version": 21}
    assert state["zk_migration_state"] == 0
    assert state["producer_ids"] == {"broker_id": 2, "broker_epoch": 7, "next_producer_id": 2000}
    assert state["controllers"] == [
        {
            "id": 3000,
            "incarnation_id": str(uuid.UUID(int=9)),
            "zk_migration_ready": False,
            "listeners": [{"name": "CONTROLLER", "host": "h", "port": 9093}],
            "features": {"metadata.version": [0, 21]},
        }
    ]
    assert state["configs"] == [
        {"resource_type": 2, "resource_name": "a", "configs": {"cleanup.policy": "compact", "retention.ms": "1000"}},
        {"resource_type": 4, "resource_name": "", "configs": {"log.retention.ms": "5"}},
        {"resource_type": 4, "resource_name": "1", "configs": {"num.io.threads": "4"}},
    ]
    assert state["acl_count"] == 2
    acls = state["acls"]
    assert isinstance(acls, list)
    assert [acl["id"] for acl in acls] == [str(uuid.UUID(int=1)), str(uuid.UUID(int=2))]
    assert acls[1] == {
        "id": str(uuid.UUID(int=2)),
        "resource_type": 2,
        "resource_name": "a",
        "pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    assert state["client_quotas"] == [
        {
            "entity": [
                {"entity_type": "client-id", "entity_name": "app"},
                {"entity_type": "user", "entity_name": None},
            ],
            "quotas": {"request_percentage": 50.0},
        },
        {"entity": [{"entity_type": "user", "entity_name": "alice"}], "quotas": {"producer_byte_rate": 1024.0}},
    ]
    assert state["scram_users"] == [{"user": "alice", "mechanisms": [1, 2]}]
    assert state["delegation_tokens"] == [
        {
            "token_id": "token-1",
            "owner": "User:alice",
            "requester": "User:alice",
            "renewers": ["User:bob"],
            "issue_timestamp": 1,
            "expiration_timestamp": 2,
            "max_timestamp": 3,
        }
    ]

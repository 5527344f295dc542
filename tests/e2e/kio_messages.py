"""Builders of kio request entities for any version: one dict of fields, filtered per version.

kio has one class per version; these helpers take the superset of fields (kio names) and keep
those the version's class has, so that a test can say "a BrokerRegistration for broker 3" once
and send it at every version.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import uuid
from typing import Any

NAMES = {
    7: "controlled_shutdown",
    18: "api_versions",
    19: "create_topics",
    20: "delete_topics",
    29: "describe_acls",
    30: "create_acls",
    31: "delete_acls",
    43: "elect_leaders",
    56: "alter_partition",
    60: "describe_cluster",
    62: "broker_registration",
    63: "broker_heartbeat",
    55: "describe_quorum",
}


def module(api_key: int, version: int) -> Any:
    return importlib.import_module(f"kio.schema.{NAMES[api_key]}.v{version}.request")


def build(cls: type, **fields: Any) -> Any:
    """An instance of kio class `cls` from the fields it has (others are ignored)."""
    known = {f.name for f in dataclasses.fields(cls)}
    return cls(**{name: value for name, value in fields.items() if name in known})


def request_class(api_key: int, version: int) -> type:
    mod = module(api_key, version)
    for value in vars(mod).values():
        if (
            isinstance(value, type)
            and getattr(value, "__api_key__", None) == api_key
            and value.__name__.endswith("Request")
        ):
            return value
    raise LookupError(f"no kio request class for {api_key} v{version}")


def api_versions(version: int) -> Any:
    return build(request_class(18, version), client_software_name="kio-test", client_software_version="0.5.0")


def describe_cluster(version: int) -> Any:
    return build(request_class(60, version), include_cluster_authorized_operations=False, endpoint_type=1)


def broker_registration(version: int, broker_id: int, cluster_id: str, incarnation: uuid.UUID, port: int) -> Any:
    mod = module(62, version)
    listener = build(mod.Listener, name="PLAINTEXT", host="127.0.0.1", port=port, security_protocol=0)
    return build(
        request_class(62, version),
        broker_id=broker_id,
        cluster_id=cluster_id,
        incarnation_id=incarnation,
        listeners=(listener,),
        features=(),
        rack=None,
        is_migrating_zk_broker=False,
        log_dirs=(),
        previous_broker_epoch=-1,
    )


def broker_heartbeat(version: int, broker_id: int, epoch: int, offset: int = 10**9, **flags: Any) -> Any:
    return build(
        request_class(63, version),
        broker_id=broker_id,
        broker_epoch=epoch,
        current_metadata_offset=offset,
        want_fence=flags.get("want_fence", False),
        want_shut_down=flags.get("want_shut_down", False),
        offline_log_dirs=(),
    )


def create_topics(
    version: int, name: str, partitions: int, replication_factor: int, assignments: list[list[int]] | None = None
) -> Any:
    """A CreateTopics of one topic; with `assignments`, replica lists per partition (the first leads)."""
    mod = module(19, version)
    manual = tuple(
        build(mod.CreatableReplicaAssignment, partition_index=index, broker_ids=tuple(brokers))
        for index, brokers in enumerate(assignments or [])
    )
    topic = build(
        mod.CreatableTopic,
        name=name,
        num_partitions=-1 if manual else partitions,
        replication_factor=-1 if manual else replication_factor,
        assignments=manual,
        configs=(),
    )
    return build(
        request_class(19, version), topics=(topic,), timeout=datetime.timedelta(seconds=30), validate_only=False
    )


def delete_topics(version: int, name: str) -> Any:
    mod = module(20, version)
    fields: dict[str, Any] = {"timeout": datetime.timedelta(seconds=30), "topic_names": (name,)}
    if version >= 6:
        fields["topics"] = (build(mod.DeleteTopicState, name=name, topic_id=None),)
    return build(request_class(20, version), **fields)


def elect_leaders(version: int, topic: str, partitions: tuple[int, ...], election_type: int = 0) -> Any:
    mod = module(43, version)
    entry = build(mod.TopicPartitions, topic=topic, partitions=partitions)
    return build(
        request_class(43, version),
        election_type=election_type,
        topic_partitions=(entry,),
        timeout=datetime.timedelta(seconds=30),
    )


def alter_partition(
    version: int,
    broker_id: int,
    broker_epoch: int,
    topic: str,
    topic_id: uuid.UUID,
    partition: int,
    leader_epoch: int,
    isr: tuple[int, ...],
    partition_epoch: int,
) -> Any:
    mod = module(56, version)
    states = tuple(build(mod.BrokerState, broker_id=b, broker_epoch=-1) for b in isr) if version >= 3 else ()
    data = build(
        mod.PartitionData,
        partition_index=partition,
        leader_epoch=leader_epoch,
        new_isr=isr,
        new_isr_with_epochs=states,
        leader_recovery_state=0,
        partition_epoch=partition_epoch,
    )
    topic_data = build(mod.TopicData, topic_name=topic, topic_id=topic_id, partitions=(data,))
    return build(request_class(56, version), broker_id=broker_id, broker_epoch=broker_epoch, topics=(topic_data,))


def controlled_shutdown(version: int, broker_id: int, broker_epoch: int) -> Any:
    return build(request_class(7, version), broker_id=broker_id, broker_epoch=broker_epoch)


#: Kafka's codes (protocol.acl_codes spells them out; written here as kio's clients would send them)
TOPIC, ANY, LITERAL, READ, ALLOW = 2, 1, 3, 3, 3


def describe_acls(version: int) -> Any:
    """Kafka's AclBindingFilter.ANY (`kafka-acls --list`); v0 knows no pattern type but LITERAL."""
    return build(
        request_class(29, version),
        resource_type_filter=ANY,
        resource_name_filter=None,
        pattern_type_filter=ANY,
        principal_filter=None,
        host_filter=None,
        operation=ANY,
        permission_type=ANY,
    )


def create_acls(version: int, *topics: str) -> Any:
    """One creation per topic: User:alice may read it, from any host."""
    mod = module(30, version)
    creations = tuple(
        build(
            mod.AclCreation,
            resource_type=TOPIC,
            resource_name=topic,
            resource_pattern_type=LITERAL,
            principal="User:alice",
            host="*",
            operation=READ,
            permission_type=ALLOW,
        )
        for topic in topics
    )
    return build(request_class(30, version), creations=creations)


def delete_acls(version: int, *topics: str) -> Any:
    """One filter per topic: every ACL of that topic (v1+: of any pattern type)."""
    mod = module(31, version)
    filters = tuple(
        build(
            mod.DeleteAclsFilter,
            resource_type_filter=TOPIC,
            resource_name_filter=topic,
            pattern_type_filter=ANY,
            principal_filter=None,
            host_filter=None,
            operation=ANY,
            permission_type=ANY,
        )
        for topic in topics
    )
    return build(request_class(31, version), filters=filters)

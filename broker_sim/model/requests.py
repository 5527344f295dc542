"""Request bodies for every API and version a simulated broker (or the fleet's admin) sends.

Rules: pure builders, one per API, taking the version and returning the protocol dataclass with
exactly the fields that version carries: AlterPartition names topics (v0-1) or ids (v2+) and
carries member broker epochs from v3 (KIP-903); AlterReplicaState names topics (v0) or ids (v1);
ControlledShutdown carries the broker epoch from v2 (KIP-380); BrokerRegistration carries log
dirs from v2 and the previous epoch from v3, and names its one listener after its security
protocol (Kafka's default listener names: "PLAINTEXT", or "SSL" when the fleet runs TLS);
BrokerHeartbeat reports offline dirs from v1.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from protocol.ids import BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.alter_replica_state import AlterReplicaStateRequest, AlterReplicaStateRequestTopicReplicas
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import (
    BrokerRegistrationRequest,
    BrokerRegistrationRequestFeature,
    BrokerRegistrationRequestListener,
)
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.security_protocol import SecurityProtocol

SOFTWARE_NAME = "fencer-fleet"
SOFTWARE_VERSION = "0.1.0"


@dataclass(frozen=True, slots=True)
class Proposal:
    """One partition's ISR change as the leader asks it (the state it believes plus the new ISR)."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    member_epochs: tuple[int, ...]  # per ISR member, same order (-1: unknown, the controller skips it)
    recovery_state: int = 0


def describe_cluster(version: int) -> DescribeClusterRequest:
    return DescribeClusterRequest(endpoint_type=1) if version >= 1 else DescribeClusterRequest()


def api_versions(version: int) -> ApiVersionsRequest:
    if version >= 3:
        return ApiVersionsRequest(client_software_name=SOFTWARE_NAME, client_software_version=SOFTWARE_VERSION)
    return ApiVersionsRequest()


def broker_registration(
    version: int,
    broker_id: int,
    cluster_id: str,
    incarnation_id: uuid.UUID,
    host: str,
    port: int,
    log_dirs: Sequence[uuid.UUID],
    previous_epoch: int,
    security_protocol: int = SecurityProtocol.PLAINTEXT,
) -> BrokerRegistrationRequest:
    listener = BrokerRegistrationRequestListener(
        name=SecurityProtocol(security_protocol).name, host=host, port=port, security_protocol=security_protocol
    )
    return BrokerRegistrationRequest(
        broker_id=BrokerId(broker_id),
        cluster_id=cluster_id,
        incarnation_id=incarnation_id,
        listeners=(listener,),
        features=(
            BrokerRegistrationRequestFeature(
                name="metadata.version", min_supported_version=1, max_supported_version=21
            ),
        ),
        rack=None,
        log_dirs=tuple(log_dirs) if version >= 2 else (),
        previous_broker_epoch=BrokerEpoch(previous_epoch if version >= 3 else -1),
    )


def broker_heartbeat(
    version: int,
    broker_id: int,
    broker_epoch: int,
    metadata_offset: int,
    want_shut_down: bool,
    offline_dirs: Sequence[uuid.UUID],
) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(
        broker_id=BrokerId(broker_id),
        broker_epoch=BrokerEpoch(broker_epoch),
        current_metadata_offset=metadata_offset,
        want_shut_down=want_shut_down,
        offline_log_dirs=tuple(offline_dirs) if version >= 1 else (),
    )


def controlled_shutdown(version: int, broker_id: int, broker_epoch: int) -> ControlledShutdownRequest:
    epoch = BrokerEpoch(broker_epoch if version >= 2 else -1)
    return ControlledShutdownRequest(broker_id=BrokerId(broker_id), broker_epoch=epoch)


def alter_partition(
    version: int, broker_id: int, broker_epoch: int, proposals: Sequence[Proposal]
) -> AlterPartitionRequest:
    """One request for all proposals, grouped by topic in order of first appearance."""
    grouped: dict[str, list[Proposal]] = {}
    for proposal in proposals:
        grouped.setdefault(proposal.topic, []).append(proposal)
    topics = []
    for name, items in grouped.items():
        partitions = tuple(_partition_data(version, item) for item in items)
        if version >= 2:
            topics.append(AlterPartitionRequestTopicData(topic_id=items[0].topic_id, partitions=partitions))
        else:
            topics.append(AlterPartitionRequestTopicData(topic_name=name, partitions=partitions))
    return AlterPartitionRequest(
        broker_id=BrokerId(broker_id), broker_epoch=BrokerEpoch(broker_epoch), topics=tuple(topics)
    )


def _partition_data(version: int, proposal: Proposal) -> AlterPartitionRequestPartitionData:
    if version >= 3:
        members = tuple(
            AlterPartitionRequestBrokerState(broker_id=BrokerId(member), broker_epoch=BrokerEpoch(epoch))
            for member, epoch in zip(proposal.isr, proposal.member_epochs, strict=True)
        )
        return AlterPartitionRequestPartitionData(
            partition_index=proposal.partition,
            leader_epoch=LeaderEpoch(proposal.leader_epoch),
            new_isr_with_epochs=members,
            leader_recovery_state=proposal.recovery_state,
            partition_epoch=PartitionEpoch(proposal.partition_epoch),
        )
    return AlterPartitionRequestPartitionData(
        partition_index=proposal.partition,
        leader_epoch=LeaderEpoch(proposal.leader_epoch),
        new_isr=tuple(BrokerId(member) for member in proposal.isr),
        leader_recovery_state=proposal.recovery_state if version >= 1 else 0,
        partition_epoch=PartitionEpoch(proposal.partition_epoch),
    )


def alter_replica_state(
    version: int,
    broker_id: int,
    broker_epoch: int,
    new_state: int,
    reason: str,
    replicas: Sequence[tuple[str, uuid.UUID, int]],
) -> AlterReplicaStateRequest:
    """`replicas`: (topic name, topic id, partition); grouped by topic in order of first appearance."""
    grouped: dict[str, tuple[uuid.UUID, list[int]]] = {}
    for name, topic_id, partition in replicas:
        grouped.setdefault(name, (topic_id, []))[1].append(partition)
    topics = tuple(
        AlterReplicaStateRequestTopicReplicas(topic_id=topic_id, partitions=tuple(parts))
        if version >= 1
        else AlterReplicaStateRequestTopicReplicas(name=name, partitions=tuple(parts))
        for name, (topic_id, parts) in grouped.items()
    )
    return AlterReplicaStateRequest(
        broker_id=BrokerId(broker_id),
        broker_epoch=BrokerEpoch(broker_epoch),
        new_state=new_state,
        reason=reason,
        topics=topics,
    )

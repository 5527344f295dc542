"""One template per API the daemon serves: how to make a valid request that reaches its handler.

`TEMPLATES[api key](context, version, rng)` builds a request of that API, valid at `version`, from
the node's current values: the right cluster id, a known topic and partition with their current
epochs and ISR, a known broker with its epoch, `__cluster_metadata` partition 0 for the Raft RPCs
(Fetch names it by topic id `uuid.UUID(int=1)`), the Raft epoch and log end offset. Hostile
values are put in afterwards (`values.hostile_variant`); a template is the request a correct
client would send, so that what the daemon does with a hostile one is the hostile value's doing.

Rules: every (api key, version) of `controller.ops.served.INBOUND_API_KEYS` x `served_versions` has
a template that encodes (`missing_templates()`, checked by the suite): an API added to the
registry without one here fails that test. Every choice comes from `rng`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

from controller.ops.served import INBOUND_API_KEYS, served_versions
from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.api_keys import ApiKey
from protocol.messages import alter_partition as ap
from protocol.messages import alter_replica_state as ars
from protocol.messages import api_versions as av
from protocol.messages import begin_quorum_epoch as bqe
from protocol.messages import broker_heartbeat as bh
from protocol.messages import broker_registration as br
from protocol.messages import controlled_shutdown as cs
from protocol.messages import create_acls as ca
from protocol.messages import create_topics as ct
from protocol.messages import delete_acls as da
from protocol.messages import delete_topics as dt
from protocol.messages import describe_acls as dacl
from protocol.messages import describe_cluster as dc
from protocol.messages import describe_quorum as dq
from protocol.messages import elect_leaders as el
from protocol.messages import end_quorum_epoch as eqe
from protocol.messages import fetch as fe
from protocol.messages import fetch_snapshot as fs
from protocol.messages import vote as vo
from protocol.registry import encode_request
from protocol.spec import Data

from .context import METADATA_TOPIC, METADATA_TOPIC_ID, UNKNOWN_ID, BrokerView, Context, PartitionView, TopicView
from .values import fit

Template = Callable[[Context, int, random.Random], Data]
MiB = 1 << 20
INT32_MAX = 2**31 - 1
#: the principal of the ACLs templates create (never a super user's, never the bystander's)
ACL_PRINCIPAL = "User:fuzzed"


def _topic(context: Context, rng: random.Random) -> TopicView:
    """A known topic (one nobody knows when there is none: a valid request still)."""
    return rng.choice(context.topics) if context.topics else TopicView("no-such-topic", uuid.UUID(int=0), ())


def _partition(context: Context, rng: random.Random) -> tuple[TopicView, PartitionView]:
    topic = _topic(context, rng)
    if not topic.partitions:
        return topic, PartitionView(0, UNKNOWN_ID, 0, 0, (UNKNOWN_ID,), (UNKNOWN_ID,))
    return topic, rng.choice(topic.partitions)


def _broker(context: Context, rng: random.Random) -> BrokerView:
    if context.brokers:
        return rng.choice(context.brokers)
    return BrokerView(UNKNOWN_ID, -1, uuid.UUID(int=0), True)


def _epoch_of(context: Context, broker_id: int) -> int:
    broker = context.broker(broker_id)
    return broker.epoch if broker is not None else -1


def _voter(context: Context, rng: random.Random) -> int:
    return rng.choice(context.voters)


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128))


# Every template fills in each field any version has; `build` resets what `version` lacks.
# ------------------------------------------------------------------ cluster and brokers
def api_versions(context: Context, version: int, rng: random.Random) -> Data:
    return av.ApiVersionsRequest(client_software_name="fencer-fuzz", client_software_version="1.0")


def describe_cluster(context: Context, version: int, rng: random.Random) -> Data:
    return dc.DescribeClusterRequest(
        include_cluster_authorized_operations=rng.random() < 0.5, endpoint_type=rng.choice((1, 2))
    )


def broker_registration(context: Context, version: int, rng: random.Random) -> Data:
    """A known broker again (its incarnation or a new one), or a new broker id."""
    broker = _broker(context, rng) if context.brokers and rng.random() < 0.5 else None
    incarnation = broker.incarnation_id if broker is not None and rng.random() < 0.5 else _uuid(rng)
    return br.BrokerRegistrationRequest(
        broker_id=broker.broker_id if broker is not None else rng.randrange(20, 30),
        cluster_id=context.cluster_id,
        incarnation_id=incarnation,
        listeners=(br.BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=context.dead_port),),
        features=(br.BrokerRegistrationRequestFeature(name="metadata.version", min_supported_version=1),),
        rack=rng.choice((None, "rack-a")),
        log_dirs=(_uuid(rng),),
        previous_broker_epoch=broker.epoch if broker is not None else -1,
    )


def broker_heartbeat(context: Context, version: int, rng: random.Random) -> Data:
    broker = _broker(context, rng)
    return bh.BrokerHeartbeatRequest(
        broker_id=broker.broker_id, broker_epoch=broker.epoch, current_metadata_offset=context.log_end_offset
    )


def controlled_shutdown(context: Context, version: int, rng: random.Random) -> Data:
    broker = _broker(context, rng)
    return cs.ControlledShutdownRequest(broker_id=broker.broker_id, broker_epoch=broker.epoch)


# ------------------------------------------------------------------ topics and partitions
def create_topics(context: Context, version: int, rng: random.Random) -> Data:
    """A new topic (sometimes a known name), placed by the daemon or by hand on unfenced brokers."""
    name = _topic(context, rng).name if context.topics and rng.random() < 0.3 else f"fz-{rng.getrandbits(24):06x}"
    unfenced = [broker.broker_id for broker in context.brokers if not broker.fenced]
    if unfenced and rng.random() < 0.5:
        assignments = tuple(
            ct.CreateTopicsRequestCreatableReplicaAssignment(
                partition_index=index, broker_ids=tuple(rng.sample(unfenced, min(len(unfenced), 2)))
            )
            for index in range(rng.randrange(1, 3))
        )
        topic = ct.CreateTopicsRequestCreatableTopic(
            name=name, num_partitions=-1, replication_factor=-1, assignments=assignments
        )
    else:
        topic = ct.CreateTopicsRequestCreatableTopic(
            name=name, num_partitions=rng.randrange(1, 4), replication_factor=rng.randrange(1, 3)
        )
    return ct.CreateTopicsRequest(topics=(topic,), timeout_ms=30000, validate_only=rng.random() < 0.2)


def delete_topics(context: Context, version: int, rng: random.Random) -> Data:
    """A known topic by name (v1-5), by name or by id (v6)."""
    topic = _topic(context, rng)
    state = (
        dt.DeleteTopicsRequestDeleteTopicState(name=None, topic_id=topic.topic_id)
        if rng.random() < 0.5
        else dt.DeleteTopicsRequestDeleteTopicState(name=topic.name)
    )
    return dt.DeleteTopicsRequest(topics=(state,), topic_names=(topic.name,), timeout_ms=30000)


def elect_leaders(context: Context, version: int, rng: random.Random) -> Data:
    """A known topic's partitions, or (rarely) every partition."""
    topic = _topic(context, rng)
    chosen = (
        None
        if rng.random() < 0.1
        else (
            el.ElectLeadersRequestTopicPartitions(
                topic=topic.name, partitions=tuple(part.index for part in topic.partitions)
            ),
        )
    )
    return el.ElectLeadersRequest(election_type=rng.choice((0, 1)), topic_partitions=chosen, timeout_ms=30000)


def alter_partition(context: Context, version: int, rng: random.Random) -> Data:
    """A partition's leader with its epochs and the ISR as it is, shrunk to the leader, or all replicas."""
    topic, part = _partition(context, rng)
    leader = context.broker(part.leader) or _broker(context, rng)
    isr = rng.choice((part.isr, part.isr, (leader.broker_id,), part.replicas))
    partition = ap.AlterPartitionRequestPartitionData(
        partition_index=part.index,
        leader_epoch=part.leader_epoch,
        new_isr=isr,
        new_isr_with_epochs=tuple(
            ap.AlterPartitionRequestBrokerState(broker_id=b, broker_epoch=_epoch_of(context, b)) for b in isr
        ),
        partition_epoch=part.partition_epoch,
    )
    data = ap.AlterPartitionRequestTopicData(topic_name=topic.name, topic_id=topic.topic_id, partitions=(partition,))
    return ap.AlterPartitionRequest(broker_id=leader.broker_id, broker_epoch=leader.epoch, topics=(data,))


def alter_replica_state(context: Context, version: int, rng: random.Random) -> Data:
    """A broker's replica going offline or online (a partition it hosts, if any)."""
    broker = _broker(context, rng)
    hosted = [(t, p.index) for t in context.topics for p in t.partitions if broker.broker_id in p.replicas]
    topics = tuple(
        ars.AlterReplicaStateRequestTopicReplicas(name=topic.name, topic_id=topic.topic_id, partitions=(index,))
        for topic, index in rng.sample(hosted, min(1, len(hosted)))
    )
    return ars.AlterReplicaStateRequest(
        broker_id=broker.broker_id,
        broker_epoch=broker.epoch,
        new_state=rng.choice((1, 2)),
        reason="fuzz",
        topics=topics,
    )


# ------------------------------------------------------------------ ACLs
def describe_acls(context: Context, version: int, rng: random.Random) -> Data:
    """Every ACL (v0 has no pattern type filter: LITERAL)."""
    return dacl.DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY,
        resource_name_filter=None,
        pattern_type_filter=PatternType.ANY,
        principal_filter=None,
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )


def _acl_resource(context: Context, rng: random.Random) -> tuple[int, str, int]:
    """(resource type, name, pattern type) of an ACL: a known topic, the topics' prefix, a group,
    the cluster."""
    return rng.choice(
        (
            (ResourceType.TOPIC, _topic(context, rng).name, PatternType.LITERAL),
            (ResourceType.TOPIC, "fz-", PatternType.PREFIXED),
            (ResourceType.GROUP, "fz-group", PatternType.LITERAL),
            (ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
        )
    )


def create_acls(context: Context, version: int, rng: random.Random) -> Data:
    """An ACL for a principal nobody connects as (v0 knows LITERAL only: `build` makes it so)."""
    resource_type, name, pattern = _acl_resource(context, rng)
    creation = ca.CreateAclsRequestAclCreation(
        resource_type=resource_type,
        resource_name=name,
        resource_pattern_type=pattern,
        principal=ACL_PRINCIPAL,
        host="*",
        operation=rng.choice((AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALTER)),
        permission_type=rng.choice((AclPermissionType.ALLOW, AclPermissionType.DENY)),
    )
    return ca.CreateAclsRequest(creations=(creation,))


def delete_acls(context: Context, version: int, rng: random.Random) -> Data:
    """The templates' ACLs on one resource, or on any resource (a v0 filter is LITERAL)."""
    resource_type, name, pattern = _acl_resource(context, rng)
    match_any = rng.random() < 0.4
    deleted = da.DeleteAclsRequestDeleteAclsFilter(
        resource_type_filter=ResourceType.ANY if match_any else resource_type,
        resource_name_filter=None if match_any else name,
        pattern_type_filter=PatternType.ANY if match_any else pattern,
        principal_filter=ACL_PRINCIPAL,
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )
    return da.DeleteAclsRequest(filters=(deleted,))


# ------------------------------------------------------------------ the quorum's RPCs
def fetch(context: Context, version: int, rng: random.Random) -> Data:
    """`__cluster_metadata` (topic id 1) partition 0 from the log end (or 0), as an observer, a
    broker or a voter; no waiting (`max_wait_ms` is a hostile value's to set)."""
    replica = rng.choice((-1, *context.broker_ids[:2], _voter(context, rng)))
    offset, last_epoch = (0, 0) if rng.random() < 0.3 else (context.log_end_offset, context.epoch)
    partition = fe.FetchRequestFetchPartition(
        partition=0,
        current_leader_epoch=context.epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_epoch,
        partition_max_bytes=MiB,
    )
    return fe.FetchRequest(
        cluster_id=context.cluster_id,
        replica_id=replica,
        replica_state=fe.FetchRequestReplicaState(replica_id=replica),
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=MiB,
        topics=(fe.FetchRequestFetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(partition,)),),
    )


def vote(context: Context, version: int, rng: random.Random) -> Data:
    """A voter standing in the next epoch with the node's log end (a pre-vote, sometimes, in v2)."""
    partition = vo.VoteRequestPartitionData(
        partition_index=0,
        candidate_epoch=min(context.epoch + 1, INT32_MAX),  # a node may already be at the last epoch
        candidate_id=_voter(context, rng),
        last_offset_epoch=context.epoch,
        last_offset=context.log_end_offset,
        pre_vote=rng.random() < 0.5,
    )
    return vo.VoteRequest(
        cluster_id=context.cluster_id,
        voter_id=context.node_id,
        topics=(vo.VoteRequestTopicData(topic_name=METADATA_TOPIC, partitions=(partition,)),),
    )


def _endpoints(cls: Any, context: Context, leader: int) -> tuple[Any, ...]:
    port = context.voter_ports.get(leader)
    return () if port is None else (cls(name="CONTROLLER", host="127.0.0.1", port=port),)


def begin_quorum_epoch(context: Context, version: int, rng: random.Random) -> Data:
    """The current leader (or a voter) announcing the current epoch."""
    leader = context.leader_id if context.leader_id is not None and rng.random() < 0.5 else _voter(context, rng)
    partition = bqe.BeginQuorumEpochRequestPartitionData(
        partition_index=0, leader_id=leader, leader_epoch=context.epoch
    )
    return bqe.BeginQuorumEpochRequest(
        cluster_id=context.cluster_id,
        voter_id=context.node_id,
        topics=(bqe.BeginQuorumEpochRequestTopicData(topic_name=METADATA_TOPIC, partitions=(partition,)),),
        leader_endpoints=_endpoints(bqe.BeginQuorumEpochRequestLeaderEndpoint, context, leader),
    )


def end_quorum_epoch(context: Context, version: int, rng: random.Random) -> Data:
    """The current leader resigning its epoch in favour of the other voters."""
    leader = context.leader_id if context.leader_id is not None else _voter(context, rng)
    successors = tuple(voter for voter in context.voters if voter != leader)
    partition = eqe.EndQuorumEpochRequestPartitionData(
        partition_index=0,
        leader_id=leader,
        leader_epoch=context.epoch,
        preferred_successors=successors,
        preferred_candidates=tuple(eqe.EndQuorumEpochRequestReplicaInfo(candidate_id=s) for s in successors),
    )
    return eqe.EndQuorumEpochRequest(
        cluster_id=context.cluster_id,
        topics=(eqe.EndQuorumEpochRequestTopicData(topic_name=METADATA_TOPIC, partitions=(partition,)),),
        leader_endpoints=_endpoints(eqe.EndQuorumEpochRequestLeaderEndpoint, context, leader),
    )


def describe_quorum(context: Context, version: int, rng: random.Random) -> Data:
    topic = dq.DescribeQuorumRequestTopicData(
        topic_name=METADATA_TOPIC, partitions=(dq.DescribeQuorumRequestPartitionData(partition_index=0),)
    )
    return dq.DescribeQuorumRequest(topics=(topic,))


def fetch_snapshot(context: Context, version: int, rng: random.Random) -> Data:
    """A snapshot the node holds (else its high watermark's id), from position 0 (or 100)."""
    end_offset, epoch = (
        rng.choice(context.snapshots)
        if context.snapshots and rng.random() < 0.8
        else (context.high_watermark, context.epoch)
    )
    partition = fs.FetchSnapshotRequestPartitionSnapshot(
        partition=0,
        current_leader_epoch=context.epoch,
        snapshot_id=fs.FetchSnapshotRequestSnapshotId(end_offset=end_offset, epoch=epoch),
        position=rng.choice((0, 0, 100)),
    )
    return fs.FetchSnapshotRequest(
        cluster_id=context.cluster_id,
        replica_id=rng.choice((-1, _voter(context, rng))),
        max_bytes=MiB,
        topics=(fs.FetchSnapshotRequestTopicSnapshot(name=METADATA_TOPIC, partitions=(partition,)),),
    )


TEMPLATES: dict[int, Template] = {
    ApiKey.API_VERSIONS: api_versions,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster,
    ApiKey.BROKER_REGISTRATION: broker_registration,
    ApiKey.BROKER_HEARTBEAT: broker_heartbeat,
    ApiKey.CONTROLLED_SHUTDOWN: controlled_shutdown,
    ApiKey.CREATE_TOPICS: create_topics,
    ApiKey.DELETE_TOPICS: delete_topics,
    ApiKey.ELECT_LEADERS: elect_leaders,
    ApiKey.ALTER_PARTITION: alter_partition,
    ApiKey.ALTER_REPLICA_STATE: alter_replica_state,
    ApiKey.DESCRIBE_ACLS: describe_acls,
    ApiKey.CREATE_ACLS: create_acls,
    ApiKey.DELETE_ACLS: delete_acls,
    ApiKey.FETCH: fetch,
    ApiKey.VOTE: vote,
    ApiKey.BEGIN_QUORUM_EPOCH: begin_quorum_epoch,
    ApiKey.END_QUORUM_EPOCH: end_quorum_epoch,
    ApiKey.DESCRIBE_QUORUM: describe_quorum,
    ApiKey.FETCH_SNAPSHOT: fetch_snapshot,
}


def build(key: int, context: Context, version: int, rng: random.Random) -> Data:
    """The template's request of API `key` at `version`, with what `version` lacks at its default."""
    return fit(TEMPLATES[key](context, version, rng), version)


def served() -> list[tuple[int, int]]:
    """Every (api key, version) the daemon serves, as the registry says."""
    return [(key, version) for key in sorted(INBOUND_API_KEYS) for version in served_versions(key)]


def missing_templates(context: Context, seeds: int = 3) -> list[tuple[int, int, str]]:
    """(api key, version, why) of every served pair without a template that builds and encodes."""
    missing = []
    for key, version in served():
        template = TEMPLATES.get(key)
        if template is None:
            missing.append((key, version, "no template"))
            continue
        for seed in range(seeds):
            try:
                message = build(key, context, version, random.Random(seed))
                if message.API.key != key:
                    raise ValueError(f"the template makes api key {message.API.key}")
                encode_request(message, version, correlation_id=1)
            except Exception as exc:  # any failure is the template's
                missing.append((key, version, f"{type(exc).__name__}: {exc}"))
                break
    return missing

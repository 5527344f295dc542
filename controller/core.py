"""The controller core: a pure state machine over decoded requests and metadata records.

Rules (architecture.md "Records, then replay"):
- `handle(api_key, version, request, now_ns, next_offset)` decides: it returns an `Outcome`,
  either a `Result` (one atomic batch of records, and the response) or `Steps` (an operation
  decided in steps: it yields each atomic batch, and decides the next one only once the caller
  has replayed it, then returns the response; `batches` walks both alike). Deciding never
  mutates durable state; only soft state (heartbeat times) is touched, as in Kafka.
- `replay(record, offset, epoch)` is the only mutation. Start-up is replay: a snapshot's records,
  then the log's tail. The caller (`controller.engine`) replays a decision's records at once,
  before they are durable, so the next decision sees them (as KRaft does); it appends them later
  (group commit) and answers only once they are: decide, replay, append, answer.
- `apply(records, collector)` replays (record, offset) pairs and returns the control requests
  (LeaderAndIsr, StopReplica) that brokers must receive because of them, or gathers them in
  `collector` (see `controller.control.orders`).
- Time (monotonic ns) and randomness (a seeded `random.Random`) are arguments; nothing here
  reads a clock, a socket or the environment.
- Authorization (`controller.ops.authorization` states the rules): `handle` takes who
  asks, a `RequestContext(principal, host)`, defaulting to "User:ANONYMOUS" from an unknown host
  (the seam: the shell passes each connection's TLS principal and peer address through
  `ControllerEngine.decide(..., context=...)`). With an authorizer configured
  (`ControllerConfig.authorizer`), an API's cluster check is made here, before its operation: a
  refusal is answered CLUSTER_AUTHORIZATION_FAILED and nothing is decided; CreateTopics and
  DeleteTopics check each topic in their operations, the ACL APIs read and write the ACLs. Every
  request refused anything leaves a `Denial` in `denials` (bounded; `take_denials` empties it),
  for the shell's metric and log. The authorizer's ACL snapshot follows replay
  (`state.authorization`); `authorizer()` is the one in force, for the checks the shell makes
  itself (the quorum's RPCs, `authorize_api`). Without an authorizer nothing is checked.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.alter_partition import AlterPartitionRequest
from protocol.messages.alter_replica_state import AlterReplicaStateRequest
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.broker_registration import BrokerRegistrationRequest
from protocol.messages.controlled_shutdown import ControlledShutdownRequest
from protocol.messages.create_acls import CreateAclsRequest
from protocol.messages.create_topics import CreateTopicsRequest
from protocol.messages.delete_acls import DeleteAclsRequest
from protocol.messages.delete_topics import DeleteTopicsRequest
from protocol.messages.describe_acls import DescribeAclsRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.elect_leaders import ElectLeadersRequest
from protocol.records.control import (
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)
from protocol.records.metadata import (
    AbortTransactionRecord,
    AccessControlEntryRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
    ZkMigrationStateRecord,
)
from protocol.spec import Data

from .auth.authorizer import Authorizer
from .control.orders import ControlOrder, OutboundCollector
from .ops import acls, brokers, cluster_info, elections, replica_state, topics
from .ops import alter_partition as alter_partition_op
from .ops.authorization import (
    CLUSTER_OPERATIONS,
    DEFAULT_CONTEXT,
    QUORUM_RPCS,
    UNCHECKED,
    Access,
    Denial,
    RequestContext,
    denied_message,
    quorum_denied,
)
from .ops.not_controller import error_answer
from .ops.snapshot import snapshot_records
from .state.cluster import ReplayError
from .state.controller_state import ControllerConfig, ControllerState, Outcome, RecordAndVersion, Result, Steps
from .state.frozen import FrozenState, freeze
from .state.replication import IsrChanges, Replaced

#: a named handler: (request, version, now in monotonic ns, the offset its first record would get,
#: the request's access: who asks and what the authorizer lets them do)
Handler = Callable[[Any, int, int, int, Access], Outcome]
#: the denials kept until the shell takes them (a shell that never does keeps only the newest)
DENIALS_KEPT = 1024


class ClusterCounts(NamedTuple):
    """What the cluster holds, counted without walking every partition (for the metrics)."""

    active_brokers: int
    fenced_brokers: int
    #: brokers flagged InControlledShutdown, fenced or not: the flag stays on the fenced
    #: registration until a new incarnation registers (as Kafka's ControlledShutdownBrokerCount)
    controlled_shutdown_brokers: int
    topics: int
    partitions: int
    leaderless_partitions: int
    last_offset: int
    controller_epoch: int


def denied_answer(api_key: int, version: int, request: Data, context: RequestContext) -> Data:
    """The answer to a request whose cluster check (`ops.authorization.authorize_api`) failed:
    CLUSTER_AUTHORIZATION_FAILED in its getErrorResponse shape (`ops.not_controller.error_answer`
    for the APIs the core serves, `ops.authorization.quorum_denied` for the quorum's RPCs). The
    core answers with it; the shell too, for the quorum's RPCs and, on a standby, before answering
    NOT_CONTROLLER (Kafka checks a request before it reaches its controller)."""
    if api_key in QUORUM_RPCS:
        return quorum_denied(api_key)
    text = denied_message(api_key, context, CLUSTER_OPERATIONS[api_key])
    return error_answer(api_key, version, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, text)


def batches(outcome: Outcome) -> Steps:
    """Every batch of an operation's outcome, in order, then its response: a `Result` is one
    batch (none without records). The caller replays each batch before asking for the next."""
    if type(outcome) is Result:
        if outcome.records:
            yield outcome.records
        return outcome.response
    assert not isinstance(outcome, Result)
    return (yield from outcome)


class ControllerCore:
    def __init__(self, config: ControllerConfig, rng: random.Random | None = None) -> None:
        self.state = ControllerState(config)
        self.rng = rng if rng is not None else random.Random()
        #: the API table: each API the controller serves, to the handler named after it
        self._handlers: dict[int, Handler] = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.DESCRIBE_CLUSTER: self.describe_cluster,
            ApiKey.BROKER_REGISTRATION: self.register_broker,
            ApiKey.BROKER_HEARTBEAT: self.broker_heartbeat,
            ApiKey.CONTROLLED_SHUTDOWN: self.controlled_shutdown,
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.DELETE_TOPICS: self.delete_topics,
            ApiKey.ELECT_LEADERS: self.elect_leaders,
            ApiKey.ALTER_PARTITION: self.alter_partition,
            ApiKey.ALTER_REPLICA_STATE: self.alter_replica_state,
            ApiKey.DESCRIBE_ACLS: self.describe_acls,
            ApiKey.CREATE_ACLS: self.create_acls,
            ApiKey.DELETE_ACLS: self.delete_acls,
        }
        self._replayers = self._make_replayers()
        #: a `Denial` per request refused anything, oldest first, until `take_denials`
        self.denials: deque[Denial] = deque(maxlen=DENIALS_KEPT)

    @property
    def config(self) -> ControllerConfig:
        return self.state.config

    # ------------------------------------------------------------------ decisions
    def handle(
        self,
        api_key: int,
        version: int,
        request: Data,
        now_ns: int,
        next_offset: int,
        context: RequestContext = DEFAULT_CONTEXT,
    ) -> Outcome:
        """Decide one request from `context`: a `Result`, or `Steps` (see `Steps` and `batches`).
        `next_offset` is the offset its first record would get."""
        handler = self._handlers.get(api_key)
        if handler is None:
            raise ValueError(f"the controller does not serve api key {api_key}")
        authorizer = self.authorizer()
        if authorizer is None:  # nothing to check (the common case: no allocation per request)
            return handler(request, version, now_ns, next_offset, UNCHECKED)
        access = Access(authorizer, context)
        operation = CLUSTER_OPERATIONS.get(api_key)
        if operation is not None and not access.cluster(operation):
            outcome: Outcome = Result(denied_answer(api_key, version, request, context))
        else:
            outcome = handler(request, version, now_ns, next_offset, access)
        denial = access.denial(api_key)
        if denial is not None:
            self.denials.append(denial)
        return outcome

    def authorizer(self) -> Authorizer | None:
        """The authorizer in force, with every ACL replayed so far; None without one."""
        authorization = self.state.authorization
        return None if authorization is None else authorization.current()

    def take_denials(self) -> list[Denial]:
        """The denials since the last call, oldest first (see the module's rules)."""
        taken = list(self.denials)
        self.denials.clear()
        return taken

    # Each handler looks its operation up in its module at every call (tests and the planted
    # bugs of tests/broker_sim/broken_daemon.py replace operations by name).
    def api_versions(
        self, request: ApiVersionsRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return cluster_info.api_versions(request, version)

    def describe_cluster(
        self, request: DescribeClusterRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return cluster_info.describe_cluster(self.state, request, version)

    def register_broker(
        self, request: BrokerRegistrationRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return brokers.register(self.state, request, now_ns, next_offset)

    def broker_heartbeat(
        self, request: BrokerHeartbeatRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return brokers.heartbeat(self.state, request, now_ns)

    def heartbeat_timed_out(self, request: BrokerHeartbeatRequest, now_ns: int) -> None:
        """A heartbeat not decided by its deadline: its session kept, nothing else (soft state)."""
        brokers.heartbeat_timed_out(self.state, request, now_ns)

    def controlled_shutdown(
        self, request: ControlledShutdownRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return brokers.controlled_shutdown(self.state, request, version)

    def create_topics(
        self, request: CreateTopicsRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return topics.create_topics(self.state, request, version, self.rng, access)

    def delete_topics(
        self, request: DeleteTopicsRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return topics.delete_topics(self.state, request, version, access)

    def elect_leaders(
        self, request: ElectLeadersRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return elections.elect_leaders(self.state, request, version)

    def alter_partition(
        self, request: AlterPartitionRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return alter_partition_op.alter_partition(self.state, request, version)

    def alter_replica_state(
        self, request: AlterReplicaStateRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return replica_state.alter_replica_state(self.state, request, version)

    def describe_acls(
        self, request: DescribeAclsRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return acls.describe_acls(request, version, access.authorizer)

    def create_acls(
        self, request: CreateAclsRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        limit = self.config.max_records_per_operation
        return acls.create_acls(request, version, access.authorizer, self.rng, limit)

    def delete_acls(
        self, request: DeleteAclsRequest, version: int, now_ns: int, next_offset: int, access: Access
    ) -> Outcome:
        return acls.delete_acls(request, version, access.authorizer, self.config.max_records_per_operation)

    def expire_sessions(self, now_ns: int) -> Outcome | None:
        """Fence the broker whose session expired first, if any (call again after applying)."""
        return brokers.expired_session(self.state, now_ns)

    def start_sessions(self, now_ns: int) -> None:
        """After start-up: every registered broker gets a full session from now."""
        self.state.heartbeats.adopt(sorted(self.state.cluster.brokers), now_ns)

    def next_session_deadline_ns(self) -> int | None:
        return self.state.heartbeats.next_deadline_ns(self.state.cluster.unfenced_ids())

    # ------------------------------------------------------------------ mutation
    def replay(self, record: Data, offset: int, epoch: int = 0) -> Replaced | None:
        """Apply one committed record; `epoch` is its batch's leader epoch (the controller epoch).

        A partition record returns what it replaced (for the outbound collector), others None."""
        replayer = self._replayers.get(type(record))
        if replayer is None:
            raise ReplayError(f"cannot replay {type(record).__name__}")
        replaced = replayer(record, epoch)
        if offset > self.state.last_offset:
            self.state.last_offset = offset
        return replaced

    def _make_replayers(self) -> dict[type, Callable[[Any, int], Replaced | None]]:
        state = self.state
        cluster, replication, kept = state.cluster, state.replication, state.kept

        def unregister(record: UnregisterBrokerRecord, epoch: int) -> None:
            cluster.replay_unregister(record)
            state.heartbeats.forget(record.broker_id)

        def leader_change(record: LeaderChangeMessage, epoch: int) -> None:
            state.controller_epoch = max(state.controller_epoch, epoch)

        def ignore(record: Data, epoch: int) -> None:
            pass

        def remove_topic(record: RemoveTopicRecord, epoch: int) -> None:
            topic = replication.topics.get(record.topic_id)
            replication.replay_remove(record)  # refuses an unknown topic
            if topic is not None:
                kept.drop_topic_configs(topic.name)  # Kafka deletes a topic's configs with it

        def acl(record: AccessControlEntryRecord, epoch: int) -> None:
            kept.replay_acl(record)
            if state.authorization is not None:
                state.authorization.replay(record)

        def remove_acl(record: RemoveAccessControlEntryRecord, epoch: int) -> None:
            kept.replay_remove_acl(record)  # refuses an unknown id
            if state.authorization is not None:
                state.authorization.replay(record)

        # Read and ignored: transaction markers (which records a transaction's framing lets take
        # effect is the caller's: start-up replay applies them at the End, and the live path never
        # aborts), NoOp, snapshot header and footer, and the KRaft version and voters (the quorum's voters are
        # static, from --controller-quorum-voters, as Kafka's kraft.version 0: no record changes them).
        ignored = (
            AbortTransactionRecord,
            BeginTransactionRecord,
            EndTransactionRecord,
            NoOpRecord,
            SnapshotHeaderRecord,
            SnapshotFooterRecord,
            KRaftVersionRecord,
            VotersRecord,
        )
        return {cls: ignore for cls in ignored} | {
            PartitionChangeRecord: lambda r, e: replication.replay_change(r),
            PartitionRecord: lambda r, e: replication.replay_partition(r),
            TopicRecord: lambda r, e: replication.replay_topic(r),
            RemoveTopicRecord: remove_topic,
            RegisterBrokerRecord: lambda r, e: cluster.replay_register(r),
            BrokerRegistrationChangeRecord: lambda r, e: cluster.replay_change(r),
            FenceBrokerRecord: lambda r, e: cluster.replay_fence(r),
            UnfenceBrokerRecord: lambda r, e: cluster.replay_fence(r),
            UnregisterBrokerRecord: unregister,
            LeaderChangeMessage: leader_change,
            ConfigRecord: lambda r, e: kept.replay_config(r),
            FeatureLevelRecord: lambda r, e: kept.replay_feature(r),
            AccessControlEntryRecord: acl,
            RemoveAccessControlEntryRecord: remove_acl,
            ClientQuotaRecord: lambda r, e: kept.replay_quota(r),
            UserScramCredentialRecord: lambda r, e: kept.replay_scram(r),
            RemoveUserScramCredentialRecord: lambda r, e: kept.replay_remove_scram(r),
            DelegationTokenRecord: lambda r, e: kept.replay_token(r),
            RemoveDelegationTokenRecord: lambda r, e: kept.replay_remove_token(r),
            ProducerIdsRecord: lambda r, e: kept.replay_producer_ids(r),
            RegisterControllerRecord: lambda r, e: kept.replay_controller(r),
            ZkMigrationStateRecord: lambda r, e: kept.replay_zk_migration(r),
        }

    def apply(
        self, records: Iterable[tuple[Data, int]], collector: OutboundCollector | None = None
    ) -> list[ControlOrder]:
        """Replay committed (record, offset) pairs; return the control requests they call for.

        With a `collector`, the orders accumulate in it instead (one batch per broker for many
        requests) and nothing is returned; `collector.orders()` takes them.
        """
        own = collector is None
        active = OutboundCollector(self.state) if collector is None else collector
        for record, offset in records:
            active.before(record)
            active.after(record, self.replay(record, offset))
        return active.orders() if own else []

    # ------------------------------------------------------------------ snapshots
    def freeze(self) -> FrozenState:
        """A consistent copy of the durable state, for work done off the event loop (see `state.frozen`)."""
        return freeze(self.state)

    def snapshot_records(self) -> list[RecordAndVersion]:
        """Records that rebuild the durable state (see `controller.ops.snapshot`)."""
        return list(snapshot_records(self.freeze()))

    def counts(self) -> ClusterCounts:
        state = self.state
        replication = state.replication
        brokers = state.cluster.brokers.values()
        fenced = sum(1 for broker in brokers if broker.fenced)
        return ClusterCounts(
            active_brokers=len(brokers) - fenced,
            fenced_brokers=fenced,
            controlled_shutdown_brokers=sum(1 for broker in brokers if broker.in_controlled_shutdown),
            topics=len(replication.topics),
            partitions=replication.partition_count,
            leaderless_partitions=replication.leaderless_count,
            last_offset=state.last_offset,
            controller_epoch=state.controller_epoch,
        )

    def isr_changes(self) -> IsrChanges:
        """ISR shrinks and expands of every partition change replayed, durable or not (the engine
        tells which are committed)."""
        return self.state.replication.isr_changes

    def durable_view(self) -> tuple[object, ...]:
        """The durable state as comparable values (replay equivalence is checked on this)."""
        replication = self.state.replication
        topics_view = {
            topic_id: (topic.name, dict(sorted(topic.partitions.items())))
            for topic_id, topic in sorted(replication.topics.items())
        }
        return dict(sorted(self.state.cluster.brokers.items())), topics_view, self.state.kept.frozen()

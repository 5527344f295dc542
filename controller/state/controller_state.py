"""The whole controller state: configuration, the managers' slices, soft state, epochs.

`ControllerState` is what operations read (never write, but for the heartbeat times) and what
`replay` mutates (see `controller.core`). Who may lead or join an ISR is defined once, in
`controller.ops.changes.eligible`.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeAlias

from protocol.spec import Data

from ..auth.authorizer import AuthorizerConfig
from .authorization import AuthorizerState
from .cluster import ClusterState
from .heartbeats import HeartbeatTracker
from .kept import KeptState
from .replication import ReplicationState

RecordAndVersion = tuple[Data, int]


@dataclass(frozen=True)
class ControllerConfig:
    cluster_id: str
    node_id: int = 1
    session_timeout_ms: int = 9000
    host: str = "127.0.0.1"
    port: int = 9093
    default_partitions: int = 1
    default_replication_factor: int = 1
    #: Kafka's MAX_RECORDS_PER_USER_OP (KAFKA-14996, KAFKA-17870): the most records one operation
    #: may write in one atomic batch; larger user operations are refused, larger broker-driven
    #: ones are written as several batches.
    max_records_per_operation: int = 10_000
    #: the authorizer (Kafka's `authorizer.class.name` StandardAuthorizer, with its `super.users` and
    #: `allow.everyone.if.no.acl.found`), or None: no authorizer, nothing checked, and the ACL APIs
    #: answer SECURITY_DISABLED (see `controller.ops.authorization`)
    authorizer: AuthorizerConfig | None = None


class Result(NamedTuple):
    """What an operation decided: the records to append (atomically) and the response."""

    response: Data | None
    records: tuple[RecordAndVersion, ...] = ()


#: An operation decided in steps (Kafka's non-atomic ControllerResult): it yields the records of
#: each atomic batch, which the caller replays before asking for the next one (so every step
#: decides on the state the previous ones left; the batches are appended later, in order), and
#: returns its response, sent once every batch is durable. A batch
#: may be empty: a step that decided nothing, where the caller may let other work run.
Steps: TypeAlias = Generator[Sequence[RecordAndVersion], None, Data | None]

#: What an operation returns: everything at once, or in steps.
Outcome: TypeAlias = Result | Steps


@dataclass
class ControllerState:
    config: ControllerConfig
    cluster: ClusterState = field(default_factory=ClusterState)
    replication: ReplicationState = field(default_factory=ReplicationState)
    heartbeats: HeartbeatTracker = field(default_factory=lambda: HeartbeatTracker(9_000_000_000))
    #: configs, features, ACLs, quotas, credentials, tokens, producer ids, controllers (`state.kept`)
    kept: KeptState = field(default_factory=KeptState)
    controller_epoch: int = 0
    last_offset: int = -1
    #: the authorizer and its ACL snapshot, following the ACL records replayed (None: no authorizer)
    authorization: AuthorizerState | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.heartbeats.session_timeout_ns = self.config.session_timeout_ms * 1_000_000
        if self.config.authorizer is not None:
            self.authorization = AuthorizerState(self.config.authorizer)

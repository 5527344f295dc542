"""The journal's entries on what the brokers saw of the controller outside its answers: the
partition states and control requests (LeaderAndIsr, StopReplica) their listeners accepted or
refused, the controller epochs and senders they met, and their connections moving between
controllers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class StateObserved:
    """A partition state a broker's listener accepted from LeaderAndIsr (first sighting per epoch)."""

    kind: ClassVar[str] = "state_observed"
    wall_ns: int
    broker: int
    controller_epoch: int
    topic_id: str
    partition: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: list[int]
    replicas: list[int]


@dataclass(frozen=True, slots=True)
class ControllerSwitched:
    """A connection to the controller moved to the next address of the fleet's `--controller` list
    (only when the list has more than one), as a Kafka broker moves through its controller quorum.

    `broker`: -1 for the fleet's admin client. `channel`: "lifecycle", "data" (a broker's two
    connections) or "admin". `reason`: "not-controller" (an answer said NOT_CONTROLLER, 41, at the
    top level or below: `api` is that request's), "connect-failed" (no connection could be opened:
    nothing was sent) or "connection-lost" (the connection broke or timed out during `api`'s
    exchange). `detail`: the error as the shell saw it."""

    kind: ClassVar[str] = "controller_switch"
    wall_ns: int
    broker: int
    channel: str
    from_controller: str  # HOST:PORT
    to_controller: str
    reason: str
    api: str
    detail: str


@dataclass(frozen=True, slots=True)
class ControlRefused:
    """A LeaderAndIsr or StopReplica a broker's control listener refused whole, applying nothing: a
    controller epoch older than the newest it had seen (STALE_CONTROLLER_EPOCH, 11), or a broker epoch
    older than its own (STALE_BROKER_EPOCH, 77, checked first).

    `broker_epoch`: the broker's own at the time; `request_broker_epoch` and `controller_epoch`: the
    request's; `newest_controller_epoch`: the newest this incarnation had seen (0: none yet).
    `digest`: of the request's decoded body, every field (`listener.request_digest`), and
    `connection`: the number of the connection it came on, unique in the fleet process (both
    added with defaults: "" and 0 in an older journal, which leaves the refusal unjudged), so that a
    checker can tell the same request sent again after its refusal."""

    kind: ClassVar[str] = "control_refused"
    wall_ns: int
    broker: int
    broker_epoch: int
    api: str  # "LeaderAndIsr" or "StopReplica"
    api_version: int
    request_broker_epoch: int
    controller_epoch: int
    newest_controller_epoch: int
    error: int
    digest: str = ""
    connection: int = 0


@dataclass(frozen=True, slots=True)
class ControllerEpochSeen:
    """A broker's control listener accepted a LeaderAndIsr or StopReplica of a controller epoch newer
    than any this incarnation had seen (the first one included): from then on it refuses older ones.

    With `StateObserved` (the controller epoch of each state a broker acted on) and `ControlRefused`,
    this lets a checker hold that no broker acted on a request of an older controller epoch than one
    it had seen. `previous_controller_epoch`: 0 for the incarnation's first."""

    kind: ClassVar[str] = "controller_epoch"
    wall_ns: int
    broker: int
    broker_epoch: int
    api: str  # "LeaderAndIsr" or "StopReplica"
    controller_epoch: int
    previous_controller_epoch: int


@dataclass(frozen=True, slots=True)
class ControlSenderSeen:
    """A broker's control listener was sent a LeaderAndIsr or StopReplica by controller
    `controller_id` under `controller_epoch`, a pair this broker had not journalled before (`api`
    and `error`: that first request's kind and top-level answer, 0 when accepted).

    Kafka's controller epoch is its Raft epoch (KRaft): the LeaderChange of that epoch names the
    controller that may send under it; a checker holds the two against each other."""

    kind: ClassVar[str] = "control_sender"
    wall_ns: int
    broker: int
    api: str  # "LeaderAndIsr" or "StopReplica"
    controller_id: int
    controller_epoch: int
    error: int


@dataclass(frozen=True, slots=True)
class StopObserved:
    """A partition of a StopReplica a broker's control listener decided (the request was not refused
    whole): the broker was told to stop serving it, and to delete it when `delete`. `topic` is the
    name the request gave (StopReplica names topics, never ids); `leader_epoch` the request's for the
    partition (v3+: -2 for a deletion), -1 for v0-2, which carry none; `delete` the partition's flag
    (v3+) or the request's (v0-2); `error` the partition's answer (NONE, known partition or not, or
    FENCED_LEADER_EPOCH for a leader epoch older than the broker's)."""

    kind: ClassVar[str] = "stop_observed"
    wall_ns: int
    broker: int
    broker_epoch: int
    api_version: int
    controller_epoch: int
    topic: str
    partition: int
    leader_epoch: int
    delete: bool
    error: int


@dataclass(frozen=True, slots=True)
class LeaderAndIsrObserved:
    """A LeaderAndIsr a broker's control listener accepted whole: every FULL one (v5+, type 2), and
    the incarnation's first of each controller epoch whatever its type. `request_type`: the
    request's (1 incremental, 2 full; 0 for v0-4, which carry none); `partitions`: how many
    partition states it held."""

    kind: ClassVar[str] = "leader_and_isr_observed"
    wall_ns: int
    broker: int
    broker_epoch: int
    api_version: int
    controller_id: int
    controller_epoch: int
    request_type: int
    partitions: int

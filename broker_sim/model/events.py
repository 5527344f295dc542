"""What the model hands the shell: requests to send (`Outgoing`) and facts to record (events).

Rules: plain frozen data. The shell sends each `Outgoing` on its channel (one in flight per
channel), answers it through the model, and turns events into journal entries and counters.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from protocol.spec import Data

from .leadership import ProbeTarget
from .probes import ProbePlan
from .requests import Proposal
from .stale import StalePlan

LIFECYCLE = "lifecycle"  # DescribeCluster, ApiVersions, BrokerRegistration, BrokerHeartbeat
DATA = "data"  # AlterPartition, ControlledShutdown, AlterReplicaState, stale replays, request probes


@dataclass(frozen=True, slots=True)
class Outgoing:
    channel: str
    # describe | api-versions | register | heartbeat | alter-partition | shutdown | replica-state | stale
    # | request-probe
    purpose: str
    version: int
    body: Data
    due: float = 0.0  # heartbeats: when it was due (lateness = sent - due)
    proposals: tuple[Proposal, ...] = ()
    stale: StalePlan | None = None
    replicas: tuple[tuple[str, uuid.UUID, int], ...] = ()  # AlterReplicaState: (topic, id, partition)
    probe: ProbeTarget | None = None  # an ISR expansion built on a stale view of this follower
    request_probe: ProbePlan | None = None  # a request the controller must refuse (`probes`)


@dataclass(frozen=True, slots=True)
class Registered:
    incarnation_id: uuid.UUID
    broker_epoch: int
    log_dirs: tuple[uuid.UUID, ...] = ()  # the LogDirs its registration named (v2+; none before)


@dataclass(frozen=True, slots=True)
class Unfenced:
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class FencedSeen:
    broker_epoch: int
    intended: bool
    longest_gap_s: float


@dataclass(frozen=True, slots=True)
class PartitionAcked:
    broker_epoch: int
    version: int
    proposal: Proposal
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ShutdownEnded:
    """A controlled shutdown ended: finished (nothing remains) or not (gave up, crashed, run over)."""

    broker_epoch: int
    via: str
    version: int  # ControlledShutdown's (when `via` uses the RPC)
    started: float
    finished: float | None
    attempts: int


@dataclass(frozen=True, slots=True)
class StaleAnswered:
    plan: StalePlan
    current_broker_epoch: int
    errors: tuple[int, ...]
    accepted: bool


@dataclass(frozen=True, slots=True)
class ProbeAnswered:
    target: ProbeTarget
    proposal: Proposal
    version: int
    errors: tuple[int, ...]  # top level, then the partition's; empty: no answer


@dataclass(frozen=True, slots=True)
class RequestProbeAnswered:
    """A request probe's answer (`probes.judge`); errors empty: no answer came."""

    plan: ProbePlan
    errors: tuple[int, ...]
    accepted: bool


@dataclass(frozen=True, slots=True)
class ReplicaStateAnswered:
    """An AlterReplicaState of the broker's replicas (OFFLINE: their log dir failed; ONLINE: it was
    repaired), sent at `sent` (the model's time): the answer's top-level error, then one per
    replica of `replicas` ((topic, partition), in the request's order; -1: missing from the answer)."""

    broker_epoch: int
    version: int
    new_state: int
    sent: float
    replicas: tuple[tuple[str, int], ...]
    errors: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ShapeProblem:
    """An answer that decoded but does not fit the request (a partition missing, ...)."""

    api_key: int
    version: int
    reason: str


Event = (
    Registered
    | Unfenced
    | FencedSeen
    | PartitionAcked
    | ShutdownEnded
    | StaleAnswered
    | ProbeAnswered
    | RequestProbeAnswered
    | ReplicaStateAnswered
    | ShapeProblem
)

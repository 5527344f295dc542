"""The run's journal: what the fleet saw, as JSON lines, for the invariant checker.

Purpose: the checker judges a controller from two sources: its metadata log (the only truth about
what was committed) and this journal (what the controller told the brokers, and what the fleet did
on purpose). A run writes one journal beside its report; `python -m broker_sim check DATA_DIR
--journal PATH` reads it back. The format is the contract between the fleet (writer) and the
checker (reader); both use only this module for it.

Rules:
- One JSON object per line, with a `kind` naming the entry type below; unknown kinds are skipped
  by readers (newer writers, older readers). A truncated last line (a crashed run) is ignored.
  So the format grows by new kinds, never by changing what an existing kind's fields mean
  (`controller_switch`, `control_refused` and `controller_epoch` came with controller failover,
  and `controller_fault`, `quorum_leader` and `failover` with the fleet's own quorum, `--quorum`,
  then `quorum`, `quorum_leaders`, `vote_probe` and `control_sender`, then `stop_observed` and
  `leader_and_isr_observed` with the brokers' side of the control duties: a reader that predates
  them skips them; then `admin_probe`, the admin client's requests a correct controller must
  refuse; then `unfenced`, `delete_answer` and `create_answer`, the brokers' unfencings and the
  admin's own deletions and creations). A kind may also gain a field with a default that means
  "not recorded" (`control_refused`'s `digest` and `connection`, and `run`'s `journals_states`):
  older readers ignore it, newer ones read an older line as not recording it.
- Times are wall-clock nanoseconds (`time.time_ns()` of the shell), so that entries of several
  fleet processes and the log's batch timestamps can be put on one timeline.
- Topic ids are the canonical UUID string. Lists of broker ids keep the order the wire had.
- Entries are facts the fleet observed, never conclusions: the checker decides what is a violation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any, ClassVar


@dataclass(frozen=True, slots=True)
class RunStarted:
    """The first entry of every fleet process: the arguments that make the run replayable."""

    kind: ClassVar[str] = "run"
    wall_ns: int
    seed: int
    scenario: str
    brokers: int
    first_broker_id: int
    heartbeat_ms: int
    session_timeout_ms: int  # the controller's, as the fleet assumes it (pauses are made longer)
    shutdown_bound_ms: int  # a controlled shutdown must complete within this (README, "What it decides")
    #: the fleet's brokers journal every partition state they accept (`StateObserved`): a run that
    #: holds none was delivered none. False (the default) reads a journal written before this field.
    journals_states: bool = False
    #: a committed partition state, StopReplica or FULL LeaderAndIsr reaches its broker within this,
    #: counted from the end of any pause of the broker meanwhile (0: `shutdown_bound_ms`, as a
    #: journal written before this field)
    delivery_bound_ms: int = 0

    @property
    def delivery_bound(self) -> int:
        """The bound the checker holds deliveries to, in ms (see `delivery_bound_ms`)."""
        return self.delivery_bound_ms or self.shutdown_bound_ms


@dataclass(frozen=True, slots=True)
class RunEnded:
    kind: ClassVar[str] = "end"
    wall_ns: int
    finished: bool  # False: the run was interrupted or the controller became unreachable


@dataclass(frozen=True, slots=True)
class Registered:
    """A BrokerRegistration answered NONE: this incarnation holds `broker_epoch`."""

    kind: ClassVar[str] = "registered"
    wall_ns: int
    broker: int
    incarnation_id: str
    broker_epoch: int
    #: the LogDirs the registration named (v2+; empty before, and in an older journal)
    log_dirs: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TopicCreated:
    """A CreateTopics topic answered NONE."""

    kind: ClassVar[str] = "topic_created"
    wall_ns: int
    topic: str
    topic_id: str
    partitions: int
    replication_factor: int


@dataclass(frozen=True, slots=True)
class PartitionAcked:
    """A partition of an AlterPartition answered NONE: the controller says this state is committed.

    `requested_isr` and `member_epochs` are what the leader asked (member_epochs: v3's broker epochs
    per ISR member, in the same order; empty before v3); the other fields are the answer."""

    kind: ClassVar[str] = "partition_acked"
    wall_ns: int
    broker: int
    broker_epoch: int
    api_version: int
    topic_id: str
    partition: int
    requested_isr: list[int]
    member_epochs: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: list[int]


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
class StaleReplay:
    """A request built with epochs the fleet knows are stale, sent on purpose, and its answer.

    `reason`: "previous-incarnation" (KIP-380: built before a bounce, carries the old broker epoch),
    "old-leader-epoch" (KIP-497: a deposed leader's ISR change), "old-partition-epoch" (a retry
    after the change was applied). `errors`: the top-level error, then each partition's error, in
    the answer's order; empty when no answer came (connection closed). `accepted`: any NONE in a
    place that would have changed state (the checker decides; a NONE for a request that changes
    nothing is allowed by semantics.md)."""

    kind: ClassVar[str] = "stale_replay"
    wall_ns: int
    broker: int
    api: str
    api_version: int
    reason: str
    stale_broker_epoch: int
    current_broker_epoch: int
    correlation_id: int
    errors: list[int]
    accepted: bool
    detail: dict[str, Any] = field(default_factory=dict)  # the partitions and epochs it named


@dataclass(frozen=True, slots=True)
class Probe:
    """A leader's ISR expansion built on a stale view of a follower, sent on purpose (KIP-841, KIP-903):
    the follower is fenced, shutting down or offline as far as the fleet knows, or named with its
    previous incarnation's broker epoch. `errors`: the answer's (top level, then the partition's);
    empty when no answer came. Acceptance is judged from the log (isr-admission) and, for v3, from
    the PartitionAcked entry the acceptance also writes (ack-member-epoch): between the fleet's view
    and the controller's decision the follower may have become eligible."""

    kind: ClassVar[str] = "probe"
    wall_ns: int
    broker: int
    api_version: int
    why: str  # "fenced", "shutting-down", "offline", "previous-epoch"
    topic_id: str
    partition: int
    follower: int
    member_epoch: int
    errors: list[int]


@dataclass(frozen=True, slots=True)
class RequestProbe:
    """A request a correct controller must refuse with the error semantics.md names, sent on
    purpose (a newer kind: older readers skip it; `broker_sim/model/probes.py` lists the probes),
    and its answer.

    `probe`: the kind ("follower", "non-replica", "unknown-topic", "heartbeat-unregistered", ...);
    `broker_epoch`: the sender's when it built the request; `errors`: the answer's top-level
    error, then each partition's, in the answer's order (empty: no answer came); `accepted`: a
    NONE at the top level and, where the answer has partitions, among them; `detail`: what the
    request named (topic, partition, epochs, ISR, the broker id it claimed, ...)."""

    kind: ClassVar[str] = "request_probe"
    wall_ns: int
    broker: int
    broker_epoch: int
    api: str
    api_version: int
    probe: str
    errors: list[int]
    accepted: bool
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AdminProbe:
    """A request of the fleet's admin client that a correct controller must refuse with the error
    semantics.md names (`broker_sim/model/admin_probes.py` lists the kinds), sent on
    purpose, and its answer. A kind of its own (not `RequestProbe`): no broker sends it, and the
    checker judges it apart (`broker_sim/check/admin_probe_rules.py`).

    `probe`: the kind ("create-taken", "delete-unknown", "elect-unclean-led", ...);
    `sent_wall_ns`: when the request was first sent (`wall_ns`: when its answer came); `errors`:
    the answer's top-level error (ElectLeaders v1+; 0 where the API or version has none), then one
    per topic (CreateTopics, DeleteTopics) or partition (ElectLeaders) in the answer's order (empty:
    no answer came); `accepted`: a NONE at the top level and among the others; `detail`: what the
    request named (topic, partition, replication factor, assignment, ...)."""

    kind: ClassVar[str] = "admin_probe"
    wall_ns: int
    sent_wall_ns: int
    api: str
    api_version: int
    probe: str
    errors: list[int]
    accepted: bool
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ShutdownTracked:
    """A controlled shutdown: from the first ControlledShutdown or WantShutDown to nothing remaining."""

    kind: ClassVar[str] = "shutdown"
    broker: int
    broker_epoch: int
    via: str  # "ControlledShutdown v<N>" or "heartbeat"
    started_wall_ns: int
    finished_wall_ns: int | None  # None: still remaining when the run ended or the broker crashed
    attempts: int


@dataclass(frozen=True, slots=True)
class Fenced:
    """A broker saw itself fenced (heartbeat IsFenced after being unfenced).

    `intended`: the fleet caused it on purpose (a crash, a pause, a shutdown). `longest_gap_ms`: the
    longest time between two heartbeats the broker sent (or tried) in the session before."""

    kind: ClassVar[str] = "fenced"
    wall_ns: int
    broker: int
    broker_epoch: int
    intended: bool
    longest_gap_ms: float


@dataclass(frozen=True, slots=True)
class FaultInjected:
    """A fault from the schedule, when the shell applied it."""

    kind: ClassVar[str] = "fault"
    wall_ns: int
    broker: int
    fault: str  # "crash", "pause", "drop-connection", "disk-failure", "disk-repair", "controlled-shutdown", ...
    duration_ms: float


@dataclass(frozen=True, slots=True)
class BadAnswer:
    """An answer that broke the protocol: undecodable, wrong correlation id, wrong shape."""

    kind: ClassVar[str] = "bad_answer"
    wall_ns: int
    broker: int
    api: str
    api_version: int
    correlation_id: int
    reason: str


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


@dataclass(frozen=True, slots=True)
class ControllerFaulted:
    """The fleet acted on a node of its own controller quorum (`--quorum`): "kill" (SIGKILL),
    "restart", "pause" (SIGSTOP), "resume" (SIGCONT), "cut" (every proxy into and out of the node
    drops its connections and black-holes new ones), "heal".

    `duration_ms`: what the fault was planned to last (kill: the downtime), 0 for the actions that
    end one. `leader`, `leader_epoch`: the quorum's leader as the fleet last saw it then
    (DescribeQuorum), -1 when none was known."""

    kind: ClassVar[str] = "controller_fault"
    wall_ns: int
    node: int
    fault: str
    duration_ms: float
    leader: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class QuorumLeaderSeen:
    """The fleet saw a leader of its own quorum it had not seen before (a new leader or epoch):
    `node` answered DescribeQuorum as the leader of `leader_epoch`, with `high_watermark`."""

    kind: ClassVar[str] = "quorum_leader"
    wall_ns: int
    node: int
    leader_epoch: int
    high_watermark: int


@dataclass(frozen=True, slots=True)
class QuorumStarted:
    """The fleet started a controller quorum of its own (`--quorum`): its nodes' ids and the two Raft
    timeouts it gave every node (Kafka's controller.quorum.election.timeout.ms and fetch.timeout.ms)."""

    kind: ClassVar[str] = "quorum"
    wall_ns: int
    nodes: list[int]
    election_timeout_ms: int
    fetch_timeout_ms: int


@dataclass(frozen=True, slots=True)
class QuorumLeadersSeen:
    """A round of DescribeQuorum (every node that runs and is not paused, asked every 100 ms) in which
    the nodes that answered as a leader were not those of the round before: `leaders`, [node, epoch]
    pairs by node (empty: none did). Between two such entries, every round saw the same claims."""

    kind: ClassVar[str] = "quorum_leaders"
    wall_ns: int
    leaders: list[list[int]]


@dataclass(frozen=True, slots=True)
class VoteProbed:
    """A pre-vote (Vote v2 with PreVote) sent on purpose to `node` of the fleet's own quorum, in the
    node's own epoch as it last named it (`epoch`: a pre-vote in it changes nothing there), for voter
    `candidate` with a log behind the node's: the candidate claims a log ending at `last_offset`
    with `last_epoch`, while the node's log was known to end at `known_end` or later (the leader's
    DescribeQuorum named it a voter that far, within the high watermark: committed, never
    truncated). `error` and `granted`: the answer's (error -1: none came)."""

    kind: ClassVar[str] = "vote_probe"
    wall_ns: int
    node: int
    candidate: int
    epoch: int
    last_offset: int
    last_epoch: int
    known_end: int
    error: int
    granted: bool


@dataclass(frozen=True, slots=True)
class FailoverMeasured:
    """How the quorum and the brokers came through one controller fault (a "kill", "pause" or
    "cut" of `node`, begun at `wall_ns`; `role`: "leader" or "follower", the node's then).

    `leader`/`leader_epoch`: the leader before (-1: none known); `new_leader`/`new_leader_epoch`:
    the first leader of a newer epoch seen after it began (-1: none, or not looked for: a
    follower's fault); `elected_ms`: until then; `served_ms`: until a broker's request was first
    answered (not NOT_CONTROLLER) after it began, by a node other than a faulted leader. None:
    not within the measurement's bound or the run."""

    kind: ClassVar[str] = "failover"
    wall_ns: int
    node: int
    fault: str
    role: str
    leader: int
    leader_epoch: int
    new_leader: int
    new_leader_epoch: int
    elected_ms: float | None
    served_ms: float | None


@dataclass(frozen=True, slots=True)
class UnfencedSeen:
    """A broker's heartbeat was answered unfenced (IsFenced false) after it was fenced: the controller
    committed its unfencing before answering (a newer kind: older readers skip it)."""

    kind: ClassVar[str] = "unfenced"
    wall_ns: int
    broker: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class DeleteAnswered:
    """The admin's own DeleteTopics of a topic it created (a chaos scratch topic) and its answer for
    that topic (a newer kind). `topic_id`: as the admin knew it ("" if it did not);
    `by_id`: v6 named it by id; `error`: the answer's error for the topic, -1 if it named none."""

    kind: ClassVar[str] = "delete_answer"
    wall_ns: int
    sent_wall_ns: int
    api_version: int
    topic: str
    topic_id: str
    by_id: bool
    error: int


@dataclass(frozen=True, slots=True)
class CreateAnswered:
    """The admin's own CreateTopics of one of its topics (a fleet or scratch topic) and its answer
    for that topic. `replicas`: every broker a manual assignment names, in first-named order (none
    when the controller places the replicas); `error`: the answer's error for the topic;
    `replication_factor`: the factor asked of the controller's placement (-1: its default; 0: a
    manual assignment)."""

    kind: ClassVar[str] = "create_answer"
    wall_ns: int
    sent_wall_ns: int
    api_version: int
    topic: str
    replicas: list[int]
    error: int
    replication_factor: int = 0


@dataclass(frozen=True, slots=True)
class ElectAnswered:
    """The admin's own ElectLeaders (chaos's preferred elections, not a probe) and its answer:
    `election_type` (0 PREFERRED, 1 UNCLEAN); `error`: the answer's top-level error (0 where the
    version has none); `results`: [topic, partition, error] for each partition of the answer, in
    its order."""

    kind: ClassVar[str] = "elect_answer"
    wall_ns: int
    sent_wall_ns: int
    api_version: int
    election_type: int
    error: int
    results: list[list[Any]]


@dataclass(frozen=True, slots=True)
class ReplicaStateAnswered:
    """An AlterReplicaState of a broker's own replicas (`new_state` 1 OFFLINE: their log dir failed;
    2 ONLINE: it was repaired) and its answer: `replicas` ([topic, partition], as asked), `errors`
    the top-level error then one per replica in the same order (-1: missing from the answer)."""

    kind: ClassVar[str] = "replica_state_answer"
    wall_ns: int
    sent_wall_ns: int
    broker: int
    broker_epoch: int
    api_version: int
    new_state: int
    replicas: list[list[Any]]
    errors: list[int]


Entry = (
    RunStarted
    | RunEnded
    | Registered
    | TopicCreated
    | PartitionAcked
    | StateObserved
    | StaleReplay
    | Probe
    | RequestProbe
    | AdminProbe
    | ShutdownTracked
    | Fenced
    | FaultInjected
    | BadAnswer
    | ControllerSwitched
    | ControlRefused
    | ControllerEpochSeen
    | ControllerFaulted
    | QuorumLeaderSeen
    | FailoverMeasured
    | QuorumStarted
    | QuorumLeadersSeen
    | VoteProbed
    | ControlSenderSeen
    | StopObserved
    | LeaderAndIsrObserved
    | UnfencedSeen
    | DeleteAnswered
    | CreateAnswered
    | ElectAnswered
    | ReplicaStateAnswered
)
ENTRY_TYPES: dict[str, type[Any]] = {
    kind.kind: kind
    for kind in (
        RunStarted,
        RunEnded,
        Registered,
        TopicCreated,
        PartitionAcked,
        StateObserved,
        StaleReplay,
        Probe,
        RequestProbe,
        AdminProbe,
        ShutdownTracked,
        Fenced,
        FaultInjected,
        BadAnswer,
        ControllerSwitched,
        ControlRefused,
        ControllerEpochSeen,
        ControllerFaulted,
        QuorumLeaderSeen,
        FailoverMeasured,
        QuorumStarted,
        QuorumLeadersSeen,
        VoteProbed,
        ControlSenderSeen,
        StopObserved,
        LeaderAndIsrObserved,
        UnfencedSeen,
        DeleteAnswered,
        CreateAnswered,
        ElectAnswered,
        ReplicaStateAnswered,
    )
}

_FIELD_NAMES: dict[type[Any], tuple[str, ...]] = {
    kind: tuple(item.name for item in fields(kind)) for kind in ENTRY_TYPES.values()
}


def field_names(entry: Entry) -> tuple[str, ...]:
    """The fields of `entry`'s kind, in order (its `kind` aside)."""
    return _FIELD_NAMES[type(entry)]


class JournalError(ValueError):
    """A journal line that is not a valid entry (other than a truncated last line)."""


def to_line(entry: Entry) -> str:
    # the same object `asdict` gives (entries hold only JSON values), without its deep copy
    names = _FIELD_NAMES[type(entry)]
    data = {"kind": entry.kind}
    for name in names:
        data[name] = getattr(entry, name)
    return json.dumps(data, separators=(",", ":")) + "\n"


def from_object(data: dict[str, Any]) -> Entry | None:
    """The entry `data` describes; None for an unknown kind. Raises JournalError on a bad entry."""
    kind = ENTRY_TYPES.get(str(data.get("kind")))
    if kind is None:
        return None
    names = _FIELD_NAMES[kind]
    try:
        entry: Entry = kind(**{key: value for key, value in data.items() if key in names})
    except TypeError as error:
        raise JournalError(f"{data.get('kind')} entry: {error}") from error
    return entry


def read_journal(path: Path) -> Iterator[Entry]:
    """The entries of a journal file, read a line at a time (a run's journal can hold millions); a
    partly written last line is skipped, any other bad line raises."""
    with open(path, encoding="utf-8", newline="\n") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.endswith("\n"):
                return  # no newline yet: the writer was interrupted mid-line
            if line.strip():
                entry = _entry(path, number, line)
                if entry is not None:
                    yield entry


def _entry(path: Path, number: int, line: str) -> Entry | None:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise JournalError(f"{path}:{number}: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise JournalError(f"{path}:{number}: not an object")
    return from_object(data)


class JournalWriter:
    """Appends entries to a journal file; `flush` makes them visible to a concurrent reader."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._stream: IO[str] = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self.entries = 0

    def write(self, entry: Entry) -> None:
        self._stream.write(to_line(entry))
        self.entries += 1

    def write_all(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            self.write(entry)

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self._stream.close()

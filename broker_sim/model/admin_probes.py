"""Admin probes: requests the fleet's admin client sends in chaos that a correct
controller must refuse with the exact error semantics.md names ("CreateTopics, DeleteTopics,
ElectLeaders"), journalled with their answer (`journal.AdminProbe`) and judged by the checker
(`broker_sim.check.admin_probe_rules`).

Rules:
- The kinds (`KINDS`), one topic or partition per request, built from what the admin knows
  (`AdminKnowledge`: the fleet topics it created, which nothing ever deletes; the brokers the
  controller listed; partitions its process's active brokers lead, as committed):
  CreateTopics (v2-7, every version the codec speaks; v0-1 are not served):
  - "create-taken": one partition of replication factor 1 under a fleet topic's name:
    TOPIC_ALREADY_EXISTS (36) (the name is checked before anything else of the topic);
  - "create-replication-factor": a fresh name, one partition of replication factor 32,767:
    INVALID_REPLICATION_FACTOR (38). The fleet cannot know how many brokers the controller has
    (other fleets may share it), so it asks for the most a request can carry (the field is an
    INT16): refused by any cluster of fewer than 32,767 active brokers, far past any fleet's;
  - "create-unregistered-replica": a fresh name, one partition assigned to a listed broker and an
    id no broker registers (negative, or `UNREGISTERED_BASE` and up, `probes.unregistered_id`),
    or to that id alone: INVALID_REPLICA_ASSIGNMENT (39);
  - "create-empty-replicas": a fresh name, one partition assigned an empty replica list:
    INVALID_REPLICA_ASSIGNMENT (39);
  - malformed assignments over listed brokers, each INVALID_REPLICA_ASSIGNMENT (39), as Kafka's
    ReplicationControlManager refuses them: "create-bad-partition-indexes" (partition indexes not
    0 to N-1 each once: one repeated, [0, 0], or a gap, [1] or [0, 2], seeded);
    "create-repeated-replica" (one partition naming a broker twice); "create-uneven-replicas"
    (partition 1 with fewer replicas than partition 0; needs two listed brokers).
  A creation probe is validate_only one time in four (`VALIDATE_ONLY_CHANCE`: the same checks
  apply, nothing written either way); fresh names are "fleet-<seed>-admin-probe-<n>", unlike
  any topic the fleet creates otherwise.
  DeleteTopics (v1-6): "delete-unknown": a topic no topic has: by name (v1-5, and v6 one time in
  four) UNKNOWN_TOPIC_OR_PARTITION (3), by a random id (v6) UNKNOWN_TOPIC_ID (100).
  ElectLeaders (v0-2; v0 has no election type, it is PREFERRED; v1+ PREFERRED or UNCLEAN, seeded):
  - "elect-unknown-topic": partition 0 of a topic no topic has: UNKNOWN_TOPIC_OR_PARTITION (3);
  - "elect-unknown-partition": a partition index (`probes.UNKNOWN_PARTITION` and up) of a fleet
    topic: UNKNOWN_TOPIC_OR_PARTITION (3);
  - "elect-unclean-led" (v1-2): UNCLEAN for a partition an active broker of the process leads:
    ELECTION_NOT_NEEDED (84). The leader may be lost before the request arrives: whether the
    partition was leaderless then is the log's to say (the checker's), not the fleet's.
  - "elect-unclean-leaderless" (v1-2): UNCLEAN for a partition the fleet's brokers last heard is
    leaderless (the newest LeaderAndIsr state any of them holds, by leader and partition epoch,
    names leader -1): an admin asking for the unclean election Kafka leaves to an operator. Not
    in the cycle: whenever a probe is due and such a partition is known, this is the probe.
    Elected (NONE), ELIGIBLE_LEADERS_NOT_AVAILABLE (no replica eligible) or ELECTION_NOT_NEEDED
    (a leader came back first): which one is right is the log's to say.
- Not probed: the partition bound (more than 10,000 new partitions in one CreateTopics:
  POLICY_VIOLATION). The bound is the controller's `--max-records-per-operation`, which the fleet
  cannot learn: a controller started with a higher one is right to create a 10,001-partition
  topic (and the fleet would then carry it), and a request over every possible setting (partition
  counts adding up past 2^31) is refused by a correct controller but sends one without the bound
  into placing billions of replicas: a hung controller, not an answer to judge.
- `judge`: the answer's errors (top level, then each topic's or partition's) and whether it was
  accepted: NONE at the top level and among the others. Which answers are right is the checker's
  (`broker_sim.check.admin_probe_rules.expected`), not the fleet's: the fleet records facts.
- Versions: each API's probes take consecutive versions of the kind's range from a seeded offset
  (`versions.spread`, with the probes' own counter per API), so a run's few probes cover them.
- Pacing (`AdminProbes`, chaos only): one probe every `GAP_S` (seeded within it), the kinds in a
  cycle of `KINDS` from a seeded start, a kind it cannot build now skipped for the next (but
  "elect-unclean-leaderless", first whenever it can be built). Its
  randomness is its own seeded `random.Random`, so the admin's other draws are untouched; times
  are passed in.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
)
from protocol.messages.delete_topics import (
    DeleteTopicsRequest,
    DeleteTopicsRequestDeleteTopicState,
    DeleteTopicsResponse,
)
from protocol.messages.elect_leaders import (
    PREFERRED,
    UNCLEAN,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    ElectLeadersResponse,
)
from protocol.spec import Data
from protocol.versions import Versions

from . import versions
from .probes import UNKNOWN_PARTITION, unregistered_id

CREATE_TAKEN = "create-taken"
CREATE_REPLICATION_FACTOR = "create-replication-factor"
CREATE_UNREGISTERED_REPLICA = "create-unregistered-replica"
CREATE_EMPTY_REPLICAS = "create-empty-replicas"
CREATE_BAD_PARTITION_INDEXES = "create-bad-partition-indexes"
CREATE_REPEATED_REPLICA = "create-repeated-replica"
CREATE_UNEVEN_REPLICAS = "create-uneven-replicas"
DELETE_UNKNOWN = "delete-unknown"
ELECT_UNKNOWN_TOPIC = "elect-unknown-topic"
ELECT_UNKNOWN_PARTITION = "elect-unknown-partition"
ELECT_UNCLEAN_LED = "elect-unclean-led"
ELECT_UNCLEAN_LEADERLESS = "elect-unclean-leaderless"

#: every kind, in the order the admin cycles through them (from a seeded start)
KINDS = (
    CREATE_TAKEN,
    DELETE_UNKNOWN,
    ELECT_UNCLEAN_LED,
    CREATE_REPLICATION_FACTOR,
    ELECT_UNKNOWN_TOPIC,
    CREATE_UNREGISTERED_REPLICA,
    ELECT_UNKNOWN_PARTITION,
    CREATE_EMPTY_REPLICAS,
    CREATE_BAD_PARTITION_INDEXES,
    CREATE_REPEATED_REPLICA,
    CREATE_UNEVEN_REPLICAS,
)
#: every kind the admin sends: the cycle's, and the one asked first whenever it can be built
ALL_KINDS = (*KINDS, ELECT_UNCLEAN_LEADERLESS)
#: the versions each kind is sent at
RANGES = {
    CREATE_TAKEN: Versions(2, 7),
    CREATE_REPLICATION_FACTOR: Versions(2, 7),
    CREATE_UNREGISTERED_REPLICA: Versions(2, 7),
    CREATE_EMPTY_REPLICAS: Versions(2, 7),
    CREATE_BAD_PARTITION_INDEXES: Versions(2, 7),
    CREATE_REPEATED_REPLICA: Versions(2, 7),
    CREATE_UNEVEN_REPLICAS: Versions(2, 7),
    DELETE_UNKNOWN: Versions(1, 6),
    ELECT_UNKNOWN_TOPIC: Versions(0, 2),
    ELECT_UNKNOWN_PARTITION: Versions(0, 2),
    ELECT_UNCLEAN_LED: Versions(1, 2),  # v0 has no election type
    ELECT_UNCLEAN_LEADERLESS: Versions(1, 2),
}
API_OF = {
    **{kind: ApiKey.CREATE_TOPICS for kind in RANGES if kind.startswith("create-")},
    DELETE_UNKNOWN: ApiKey.DELETE_TOPICS,
    **{kind: ApiKey.ELECT_LEADERS for kind in RANGES if kind.startswith("elect-")},
}
MAX_REPLICATION_FACTOR = 32767  # CreateTopics' ReplicationFactor is an INT16
GAP_S = (1.0, 2.0)  # between two probes (seeded): about ten in a 15 s run, every kind about once
VALIDATE_ONLY_CHANCE = 0.25
BY_NAME_AT_V6_CHANCE = 0.25
TIMEOUT_MS = 30000


@dataclass(frozen=True, slots=True)
class AdminProbePlan:
    probe: str  # one of KINDS
    api_key: int
    version: int
    body: Data
    detail: dict[str, Any] = field(default_factory=dict)
    #: a fresh topic the request names: created if the controller wrongly accepts it (None: none)
    creates: str | None = None


@dataclass(frozen=True, slots=True)
class AdminKnowledge:
    """What the admin knows when it builds a probe."""

    seed: int
    topics: Sequence[str]  # fleet topics it created (answered NONE or TOPIC_ALREADY_EXISTS), never deleted
    brokers: Sequence[int]  # the brokers the controller listed (DescribeCluster)
    led: Sequence[tuple[str, int]]  # (topic, partition) of those topics an active broker leads, as committed
    #: (topic, partition) of those topics whose newest state the brokers hold names no leader
    leaderless: Sequence[tuple[str, int]] = ()


def judge(response: Data) -> tuple[list[int], bool]:
    """(errors: top level, then each topic's or partition's; accepted: see the module rules)."""
    if isinstance(response, CreateTopicsResponse):
        codes = [t.error_code for t in response.topics]
        return [ErrorCode.NONE, *codes], ErrorCode.NONE in codes
    if isinstance(response, DeleteTopicsResponse):
        codes = [t.error_code for t in response.responses]
        return [ErrorCode.NONE, *codes], ErrorCode.NONE in codes
    if isinstance(response, ElectLeadersResponse):
        codes = [p.error_code for t in response.replica_election_results for p in t.partition_result]
        return [response.error_code, *codes], response.error_code == ErrorCode.NONE and ErrorCode.NONE in codes
    raise TypeError(f"no admin probe answers with {type(response).__name__}")


def unknown_name(rng: random.Random) -> str:
    """A topic name no topic has (the fleet names its topics "fleet-...")."""
    return f"fencer-probe-no-such-topic-{rng.getrandbits(48):012x}"


def fresh_name(seed: int, index: int) -> str:
    return f"fleet-{seed}-admin-probe-{index}"


def build(kind: str, version: int, index: int, rng: random.Random, known: AdminKnowledge) -> AdminProbePlan | None:
    """A probe of `kind` at `version` (`index`: the probe's number, for fresh names), or None when
    the admin cannot build one now."""
    return _BUILDERS[kind](kind, version, index, rng, known)


# ---------------------------------------------------------------------- CreateTopics
def _creation(
    kind: str, version: int, rng: random.Random, topic: CreateTopicsRequestCreatableTopic, fresh: bool, **detail: Any
) -> AdminProbePlan:
    validate_only = rng.random() < VALIDATE_ONLY_CHANCE
    body = CreateTopicsRequest(topics=(topic,), timeout_ms=TIMEOUT_MS, validate_only=validate_only)
    named = {"topic": topic.name, "validate_only": validate_only, **detail}
    creates = topic.name if fresh and not validate_only else None
    return AdminProbePlan(kind, ApiKey.CREATE_TOPICS, version, body, named, creates)


def _taken(kind: str, version: int, index: int, rng: random.Random, known: AdminKnowledge) -> AdminProbePlan | None:
    if not known.topics:
        return None
    name = rng.choice(list(known.topics))
    topic = CreateTopicsRequestCreatableTopic(name=name, num_partitions=1, replication_factor=1)
    return _creation(kind, version, rng, topic, False, num_partitions=1, replication_factor=1)


def _replication_factor(
    kind: str, version: int, index: int, rng: random.Random, known: AdminKnowledge
) -> AdminProbePlan | None:
    name = fresh_name(known.seed, index)
    topic = CreateTopicsRequestCreatableTopic(name=name, num_partitions=1, replication_factor=MAX_REPLICATION_FACTOR)
    return _creation(kind, version, rng, topic, True, num_partitions=1, replication_factor=MAX_REPLICATION_FACTOR)


def _assignment(
    kind: str, version: int, index: int, rng: random.Random, known: AdminKnowledge
) -> AdminProbePlan | None:
    replicas: tuple[int, ...] = ()
    if kind == CREATE_UNREGISTERED_REPLICA:
        stranger = unregistered_id(rng)
        listed = [b for b in known.brokers if b != stranger]
        replicas = (rng.choice(listed), stranger) if listed and rng.random() < 0.75 else (stranger,)
    assignment = CreateTopicsRequestCreatableReplicaAssignment(partition_index=0, broker_ids=replicas)
    name = fresh_name(known.seed, index)
    topic = CreateTopicsRequestCreatableTopic(
        name=name, num_partitions=-1, replication_factor=-1, assignments=(assignment,)
    )
    return _creation(kind, version, rng, topic, True, assignment=[list(replicas)])


def _malformed(kind: str, version: int, index: int, rng: random.Random, known: AdminKnowledge) -> AdminProbePlan | None:
    """An assignment over listed brokers that Kafka refuses for its shape (see the module rules)."""
    brokers = list(known.brokers)
    if not brokers or (kind == CREATE_UNEVEN_REPLICAS and len(brokers) < 2):
        return None
    shape: list[tuple[int, tuple[int, ...]]]
    if kind == CREATE_BAD_PARTITION_INDEXES:
        indexes = rng.choice(((0, 0), (1,), (0, 2)))
        shape = [(i, (rng.choice(brokers),)) for i in indexes]
    elif kind == CREATE_REPEATED_REPLICA:
        broker = rng.choice(brokers)
        shape = [(0, (broker, broker))]
    else:
        pair = tuple(rng.sample(brokers, 2))
        shape = [(0, pair), (1, pair[:1])]
    assignments = tuple(
        CreateTopicsRequestCreatableReplicaAssignment(partition_index=i, broker_ids=replicas) for i, replicas in shape
    )
    topic = CreateTopicsRequestCreatableTopic(
        name=fresh_name(known.seed, index), num_partitions=-1, replication_factor=-1, assignments=assignments
    )
    detail = {"assignment": [[i, list(replicas)] for i, replicas in shape]}
    return _creation(kind, version, rng, topic, True, **detail)


# ---------------------------------------------------------------------- DeleteTopics
def _delete_unknown(
    kind: str, version: int, index: int, rng: random.Random, known: AdminKnowledge
) -> AdminProbePlan | None:
    name = unknown_name(rng)
    if version >= 6 and rng.random() >= BY_NAME_AT_V6_CHANCE:
        topic_id = uuid.UUID(int=rng.getrandbits(128))
        body = DeleteTopicsRequest(
            topics=(DeleteTopicsRequestDeleteTopicState(topic_id=topic_id),), timeout_ms=TIMEOUT_MS
        )
        return AdminProbePlan(kind, ApiKey.DELETE_TOPICS, version, body, {"topic_id": str(topic_id), "by_id": True})
    if version >= 6:
        body = DeleteTopicsRequest(topics=(DeleteTopicsRequestDeleteTopicState(name=name),), timeout_ms=TIMEOUT_MS)
    else:
        body = DeleteTopicsRequest(topic_names=(name,), timeout_ms=TIMEOUT_MS)
    return AdminProbePlan(kind, ApiKey.DELETE_TOPICS, version, body, {"topic": name, "by_id": False})


# ---------------------------------------------------------------------- ElectLeaders
def _election(
    kind: str, version: int, rng: random.Random, topic: str, partition: int, election: int | None = None
) -> AdminProbePlan:
    if version == 0:
        election = PREFERRED
    elif election is None:
        election = rng.choice((PREFERRED, UNCLEAN))
    wanted = (ElectLeadersRequestTopicPartitions(topic=topic, partitions=(partition,)),)
    body = ElectLeadersRequest(election_type=election, topic_partitions=wanted, timeout_ms=TIMEOUT_MS)
    detail = {"topic": topic, "partition": partition, "election_type": election}
    return AdminProbePlan(kind, ApiKey.ELECT_LEADERS, version, body, detail)


def _elect_unknown(
    kind: str, version: int, index: int, rng: random.Random, known: AdminKnowledge
) -> AdminProbePlan | None:
    if kind == ELECT_UNKNOWN_TOPIC:
        return _election(kind, version, rng, unknown_name(rng), 0)
    if not known.topics:
        return None
    topic = rng.choice(list(known.topics))
    return _election(kind, version, rng, topic, UNKNOWN_PARTITION + rng.randrange(1 << 10))


def _unclean(kind: str, version: int, index: int, rng: random.Random, known: AdminKnowledge) -> AdminProbePlan | None:
    """UNCLEAN for a partition an active broker leads, or one the brokers last heard is leaderless."""
    partitions = known.led if kind == ELECT_UNCLEAN_LED else known.leaderless
    if version < 1 or not partitions:
        return None
    topic, partition = rng.choice(list(partitions))
    return _election(kind, version, rng, topic, partition, UNCLEAN)


_BUILDERS: dict[str, Callable[[str, int, int, random.Random, AdminKnowledge], AdminProbePlan | None]] = {
    CREATE_TAKEN: _taken,
    CREATE_REPLICATION_FACTOR: _replication_factor,
    CREATE_UNREGISTERED_REPLICA: _assignment,
    CREATE_EMPTY_REPLICAS: _assignment,
    CREATE_BAD_PARTITION_INDEXES: _malformed,
    CREATE_REPEATED_REPLICA: _malformed,
    CREATE_UNEVEN_REPLICAS: _malformed,
    DELETE_UNKNOWN: _delete_unknown,
    ELECT_UNKNOWN_TOPIC: _elect_unknown,
    ELECT_UNKNOWN_PARTITION: _elect_unknown,
    ELECT_UNCLEAN_LED: _unclean,
    ELECT_UNCLEAN_LEADERLESS: _unclean,
}


# ---------------------------------------------------------------------- pacing
class AdminProbes:
    """The admin's probes: which kind comes next, at which version, and when (see the module rules)."""

    def __init__(self, seed: int, enabled: bool = True) -> None:
        self.seed = seed
        self.enabled = enabled
        self.rng = random.Random(f"{seed}:admin-probes")
        self.position = self.rng.randrange(len(KINDS))
        self.next_at = 0.0
        self.sent: dict[int, int] = {}  # api key -> probes built of it (the version index)
        self.built = 0  # every probe built (fresh names)

    def start(self, t: float) -> None:
        """The first probe is due one gap after `t`."""
        self.next_at = t + self.rng.uniform(*GAP_S)

    def due(self, t: float) -> bool:
        return self.enabled and t >= self.next_at

    def take(self, t: float, known: AdminKnowledge) -> AdminProbePlan | None:
        """The probe to send at `t` (the next one is due a gap later), or None."""
        self.next_at = t + self.rng.uniform(*GAP_S)
        if known.leaderless and (plan := self._built(ELECT_UNCLEAN_LEADERLESS, known)) is not None:
            return plan
        for _ in range(len(KINDS)):
            kind = KINDS[self.position % len(KINDS)]
            self.position += 1
            if (plan := self._built(kind, known)) is not None:
                return plan
        return None

    def _built(self, kind: str, known: AdminKnowledge) -> AdminProbePlan | None:
        """A probe of `kind` at the next version of its API's spread, or None (nothing counted)."""
        api_key = API_OF[kind]
        index = self.sent.get(api_key, 0)
        version = versions.spread(self.seed, index, api_key, RANGES[kind])
        plan = build(kind, version, self.built, self.rng, known)
        if plan is not None:
            self.sent[api_key] = index + 1
            self.built += 1
        return plan

"""The answers semantics.md names for the requests the fleet sends on purpose that a correct
controller must refuse: a stale replay (`wrong_stale_answer`), a request probe
(`wrong_probe_answer`, `probe_partition_answers`) and a leader's ISR expansion on a stale view
(`wrong_isr_probe_answer`).

Each function says why an answer is not one the controller may give, or None. The fleet builds
these requests from what it knows, and the controller's state can only be newer, so the tables
allow, besides the error of the rule the request breaks, the errors of the checks that newer
epochs (or a topic deleted since) fire first.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker_sim.journal import RequestProbe, StaleReplay
from protocol.error_codes import ErrorCode

#: what a partition of a stale AlterPartition may be answered (semantics.md, rows c and e), besides
#: an unknown topic (deleted since: UNKNOWN_TOPIC_ID for v2+, UNKNOWN_TOPIC_OR_PARTITION for v0-1)
STALE_PARTITION_ANSWERS = {
    "old-leader-epoch": frozenset({ErrorCode.FENCED_LEADER_EPOCH}),
    "old-partition-epoch": frozenset({ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION}),
}
GONE = frozenset({ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


def wrong_stale_answer(entry: StaleReplay) -> str | None:
    """Why a rejected stale replay's answer is not the one semantics.md names, or None.

    The fleet sends a replay only once it knows its epochs are stale, and the controller's state can
    only be newer than what the fleet knew, so the check that must fire is known:
    - previous-incarnation: the request's broker epoch is no longer registered: the top-level (or
      ControlledShutdown's, BrokerHeartbeat's) error is STALE_BROKER_EPOCH;
    - old-leader-epoch: a newer leader epoch was committed: FENCED_LEADER_EPOCH (row c comes before
      "not the leader", row d, and "older partition epoch", row e);
    - old-partition-epoch: the change was applied: INVALID_UPDATE_VERSION, or FENCED_LEADER_EPOCH
      when the leader changed since.
    Where the broker bounced since, STALE_BROKER_EPOCH at the top level is right for every reason."""
    if not entry.errors or entry.accepted:
        return None
    top, partitions = entry.errors[0], entry.errors[1:]
    if top == ErrorCode.STALE_BROKER_EPOCH:
        return None
    if entry.reason == "previous-incarnation":
        return "expected STALE_BROKER_EPOCH (77): the request's broker epoch belongs to an earlier incarnation"
    allowed = STALE_PARTITION_ANSWERS.get(entry.reason)
    if allowed is None or entry.api != "AlterPartition":
        return None
    if top != ErrorCode.NONE:
        return f"expected a per-partition rejection, not the top-level error {top}"
    wrong = [code for code in partitions if code not in allowed and code not in GONE]
    if wrong:
        names = " or ".join(f"{code.name} ({int(code)})" for code in sorted(allowed))
        return f"expected {names} for every partition, got {wrong}"
    return None


# ---------------------------------------------------------------------- request probes
#: what a partition of an AlterPartition probe built on the epochs the fleet knew may be answered:
#: the row it breaks (INVALID_REQUEST: rows d, f, g and a bad LeaderRecoveryState byte), or a check
#: before it that newer epochs at the controller fire first: row c (a newer leader epoch: the
#: leader changed), row e (a newer partition epoch; after row d, before rows f and g); besides an
#: unknown topic (deleted since: GONE). A follower's probe never meets row e: one leader epoch has
#: one leader, so at the epoch it named the leader is another broker (row d), and a newer one is
#: row c, whoever leads
REFUSED_ISR = frozenset({ErrorCode.INVALID_REQUEST, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION})
REFUSED_FOLLOWER = frozenset({ErrorCode.INVALID_REQUEST, ErrorCode.FENCED_LEADER_EPOCH})
ISR_PROBES = frozenset(
    {
        "non-replica",
        "duplicate",
        "negative-id",
        "without-leader",
        "recovery-rollback",
        "recovering-isr",
        "recovery-byte",
    }
)
NEWER_EPOCH_PROBE = "alter-partition-newer-epoch"
DUPLICATE_REGISTRATION_PROBE = "registration-duplicate"
EMPTY_PROBE = "alter-partition-empty"
#: probes answered at the top level only: the one right error
TOP_LEVEL_PROBES = {
    DUPLICATE_REGISTRATION_PROBE: ErrorCode.DUPLICATE_BROKER_REGISTRATION,
    "heartbeat-unregistered": ErrorCode.STALE_BROKER_EPOCH,
    "shutdown-unregistered": ErrorCode.BROKER_NOT_AVAILABLE,
    "registration-cluster-id": ErrorCode.INCONSISTENT_CLUSTER_ID,
    "registration-negative-id": ErrorCode.INVALID_REQUEST,
    "replica-state-unknown-state": ErrorCode.UNKNOWN_REPLICA_STATE,
    "alter-partition-unregistered": ErrorCode.STALE_BROKER_EPOCH,  # checked before any partition
    "replica-state-unregistered": ErrorCode.STALE_BROKER_EPOCH,
}


def probe_partition_answers(probe: str, version: int) -> frozenset[int] | None:
    """The errors each partition of a partition-level probe may be answered (see `wrong_probe_answer`);
    None for a probe answered at the top level, or one this checker does not know (a newer fleet's)."""
    unknown_topic = ErrorCode.UNKNOWN_TOPIC_ID if version >= 2 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if probe == "follower":
        return REFUSED_FOLLOWER | GONE
    if probe in ISR_PROBES:
        return REFUSED_ISR | GONE
    if probe == "unknown-topic":
        return frozenset({unknown_topic})
    if probe == "unknown-partition":
        return frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}) | GONE
    if probe == "replica-state-unknown-topic":  # AlterReplicaState: v1 names topics by id
        return frozenset({ErrorCode.UNKNOWN_TOPIC_ID if version >= 1 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
    if probe == "replica-state-unknown-partition":  # or the topic deleted since, by id (v1)
        deleted = {ErrorCode.UNKNOWN_TOPIC_ID} if version >= 1 else set()
        return frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, *deleted})
    if probe == NEWER_EPOCH_PROBE:  # row b comes first: no newer epochs of the controller's reach it
        return frozenset({ErrorCode.NOT_CONTROLLER}) | GONE
    if probe == "replica-state-no-op":  # already in that state: NONE (or the topic deleted since)
        return frozenset({ErrorCode.NONE}) | GONE
    return None


def wrong_probe_answer(entry: RequestProbe) -> str | None:
    """Why a refused request probe's answer is not the one semantics.md names, or None.

    The fleet builds a probe from what it knows; the controller's state may only be newer: so a
    probe on a partition's epochs may meet a newer leader epoch (FENCED_LEADER_EPOCH, row c, which
    comes before "not the leader", row d) or, the leader's, a newer partition epoch
    (INVALID_UPDATE_VERSION, row e, before rows f and g), or a deleted topic; nothing else, and row
    b (NOT_CONTROLLER) before all of them for epochs far above the controller's. A probe
    on no epochs (an unknown topic, an unregistered broker id, a wrong cluster id, an unknown
    replica state) has exactly one right answer, by version where the versions differ (v2+
    AlterPartition and v1 AlterReplicaState name topics by id: UNKNOWN_TOPIC_ID; by name:
    UNKNOWN_TOPIC_OR_PARTITION)."""
    if not entry.errors or entry.accepted:
        return None
    top, partitions = entry.errors[0], entry.errors[1:]
    expected_top = TOP_LEVEL_PROBES.get(entry.probe)
    if expected_top is not None:
        if top != expected_top:
            return f"expected {_names([expected_top])}"
        return None
    if entry.probe == "partition-twice":
        return _wrong_twice(top, partitions, entry.detail.get("times_named", 2), entry.detail.get("answer_topics"))
    if entry.probe == EMPTY_PROBE:
        topics = entry.detail.get("answer_topics", 0)
        if top != ErrorCode.NONE or partitions or topics:
            return f"expected an empty success (NONE, no topic), got {topics} topics"
        return None
    allowed = probe_partition_answers(entry.probe, entry.api_version)
    if allowed is None:
        return None
    if top != ErrorCode.NONE:
        return f"expected a per-partition rejection ({_names(allowed)}), not the top-level error {top}"
    wrong = [code for code in partitions if code not in allowed]
    if not partitions or wrong:
        return f"expected {_names(allowed)} for the partition, got {partitions or 'no partition'}"
    return None


def _wrong_twice(top: int, partitions: list[int], times: int, topics: int | None) -> str | None:
    """A partition named `times` times in one topic entry (README, What it decides): the first
    naming changes nothing (NONE, or the error of epochs that moved since), each later one is
    INVALID_REQUEST (or all the deleted topic's error), every naming answered, in one topic entry
    as asked, whether the controller decided it at once or piece by piece (`topics`: the answer's
    topic entries, None where the journal does not say)."""
    first = frozenset({ErrorCode.NONE, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION}) | GONE
    later = frozenset({ErrorCode.INVALID_REQUEST}) | GONE
    if top != ErrorCode.NONE:
        return f"expected a per-partition answer, not the top-level error {top}"
    if topics is not None and topics != 1:
        return f"expected the {times} namings answered in the one topic entry asked, got {topics} topic entries"
    if len(partitions) != times or partitions[0] not in first or any(code not in later for code in partitions[1:]):
        return f"expected each naming after the first of {times} answered {_names(later)}, got {partitions}"
    return None


def wrong_isr_probe_answer(version: int, errors: list[int]) -> str | None:
    """Why a leader's ISR expansion on a stale view of a follower (a Probe entry: top level, then the
    partition's error) was refused with the wrong error, or None: an ineligible member is
    INELIGIBLE_REPLICA for v2+, OPERATION_NOT_ATTEMPTED for v0-1 (row h), unless newer epochs fired
    row c or e first, or the topic is gone; NONE is the log's to judge (the follower may have become
    eligible before the controller decided)."""
    top, partitions = errors[0], errors[1:]
    ineligible = ErrorCode.INELIGIBLE_REPLICA if version >= 2 else ErrorCode.OPERATION_NOT_ATTEMPTED
    allowed = frozenset({ErrorCode.NONE, ineligible, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION})
    if top != ErrorCode.NONE:
        return f"expected a per-partition answer, not the top-level error {top}"
    wrong = [code for code in partitions if code not in allowed | GONE]
    if wrong:
        return f"expected {_names(allowed - {ErrorCode.NONE})} (or NONE, judged from the log), got {wrong}"
    return None


def _names(codes: Iterable[int]) -> str:
    return " or ".join(f"{ErrorCode(code).name} ({int(code)})" for code in sorted(codes))

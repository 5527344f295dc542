"""What the checker reports: violations (a rule broken) and the sink that caps them.

Rules:
- A violation names its rule (a short stable id, the keys of `RULES`), where it was seen (a log
  offset, or a journal entry rendered on one line by `rendering.render_entry`), the partition or
  broker concerned, and the records involved, each rendered on one line by
  `rendering.render_record`.
- The sink counts every violation but keeps only the first `keep_per_rule` of each rule: a broken
  controller repeats the same mistake thousands of times, and the first few say what it is. Each
  rule family (`events.Subscriber`) has its own sink; `absorb` merges them under the same cap.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: Every rule the checker knows, with the invariant it stands for.
RULES: dict[str, str] = {
    # the metadata log, at every position
    "isr-admission": "a replica joins an ISR only while registered, unfenced, not shutting down and online",
    "leader-in-isr": "the leader is in the ISR, or is -1",
    "isr-shape": "the ISR is a non-empty subset of the replicas, without duplicates",
    "change-noop": "a partition change record changes something",
    "replica-set": "replicas are distinct registered brokers, one directory each",
    "leader-eligibility": "a broker made leader is registered, unfenced, not shutting down, its replica online",
    "leader-order": "a new leader is the first replica, in assignment order, in the new ISR and eligible",
    "offline-leader": "a replica on a lost directory never leads",
    "offline-in-isr": "a replica marked offline leaves the ISR unless it is the last member",
    "fenced-leader": "when a broker is fenced it leads nothing and is the only member of any ISR it is in",
    "leader-epoch": "the leader epoch rises exactly when the leader changes (MV 3.9), never goes down",
    "partition-epoch": "the partition epoch rises by one on every change, never goes down",
    "leader-recovery": "RECOVERING only after an unclean election (a new leader), with at most one ISR member",
    "unclean-election": "an unclean election (a leader from outside the ISR) makes the first eligible replica in "
    "assignment order leader, with the ISR [leader] and RECOVERING",
    "broker-epoch": "broker epochs strictly increase per broker (the same incarnation keeps its epoch)",
    "broker-registration": "a new incarnation starts fenced, not shutting down; re-registering clears neither flag",
    "registration-dirs": "a registration answered NONE keeps in its record the LogDirs it named (v2+)",
    "incarnation-offline": "a new incarnation has no offline replica once its registration's batch (or transaction) "
    "is applied (fencer's rule, not KRaft's: judged in fleet runs only)",
    "broker-change": "a broker change names the registered epoch; an unfence never ends a controlled shutdown",
    "controller-epoch": "controller epochs never decrease; only a LeaderChange control batch raises them",
    "unknown-topic": "records name topics that exist (and a new topic a fresh name and id)",
    "unknown-partition": "changes name partitions that exist",
    "snapshot-state": "a snapshot holds exactly the state the log reaches at its end offset",
    "transaction-framing": "a metadata transaction begins only when none is open, an End or Abort closes an open one, "
    "and a snapshot neither ends inside one nor holds its markers",
    # the journal against the log
    "ack-lost": "a change the controller acknowledged is in the log at the acknowledged partition epoch",
    "ack-answer": "an acknowledged ISR change answers the requested ISR, led by the requester",
    "ack-member-epoch": "an ISR member added by an acknowledged v3 change had the broker epoch its leader named",
    "observed-state": "a LeaderAndIsr a broker accepted carries a committed state (leader, epochs, ISR, replicas)",
    "observed-controller-epoch": "a LeaderAndIsr carries a controller epoch of the log, not older than its state",
    "split-leadership": "one leader epoch of a partition names one leader, whoever observed it",
    "registration-lost": "an acknowledged registration is a RegisterBrokerRecord of that broker, epoch and incarnation",
    "topic-lost": "an acknowledged topic is a TopicRecord with its id, name, partition count and replication factor",
    "stale-replay-accepted": "no request built with stale epochs is accepted",
    "stale-replay-answer": "a request built with stale epochs is rejected by the check semantics.md names",
    "probe-accepted": "no request a correct controller must refuse (a probe) is accepted",
    "probe-answer": "a probe is refused with the error semantics.md names for its kind and version",
    "unclean-answer": "an UNCLEAN ElectLeaders answered elected leaves its partition led in the log",
    "preferred-answer": "a PREFERRED ElectLeaders answered elected (or not needed) has the preferred replica "
    "lead in the log while in flight",
    "replica-state-answer": "an AlterReplicaState answered NONE has the replica offline (OFFLINE) or online "
    "(ONLINE) in the log while in flight",
    "unfence-unwritten": "a broker answered unfenced is unfenced in the log by then",
    "create-refused": "the admin's creation of its topic is refused only for a reason the log shows while in flight "
    "(name taken, a named broker not active)",
    "delete-answer": "the admin's deletion of a topic is answered NONE only if the log removed it (or it was gone), "
    "UNKNOWN_TOPIC_ID / UNKNOWN_TOPIC_OR_PARTITION only for a topic gone, nothing else",
    "bad-answer": "every answer of the controller is well formed and fits its request, and every control request "
    "names its destination's broker epoch",
    "shutdown-bound": "a controlled shutdown completes within the run's bound",
    "shutdown-release": "a shutdown answered complete leaves its broker leading no partition of replication factor > 1",
    "fleet-late-heartbeat": "no broker is fenced by a late heartbeat of the fleet's own making",
    "live-broker-fenced": "a broker heartbeating on time is never fenced",
    "silent-broker-unfenced": "a broker silent for longer than the session timeout (and a slack) is fenced",
    "control-delivery": "a committed partition state reaches its active replicas as a LeaderAndIsr within the bound",
    "delete-delivery": "a deleted topic's active replicas accept StopReplica(delete=true, leader epoch -2) within "
    "the bound",
    "stop-delivery": "a replica leaving an ISR in controlled shutdown, or going offline, gets "
    "StopReplica(delete=false, its leader epoch) within the bound",
    "full-state-delivery": "every active broker accepts a FULL LeaderAndIsr within the bound after a new controller "
    "epoch, and each broker after its unfence",
    "shutdown-keeps-sole-leader": "a leader in controlled shutdown (unfenced, online) with no eligible successor stays "
    "leader: its partition is never made leaderless (fencer's rule, not KRaft's: judged in fleet runs only, never on a "
    "log alone)",
    "online-elects": "a replica back online in the ISR of a leaderless partition, its broker active, is elected "
    "(fencer's AlterReplicaState: judged in fleet runs only)",
    "unclean-unasked": "a leader comes from outside the ISR (or RECOVERING) only by an UNCLEAN ElectLeaders the "
    "fleet sent",
    "stale-resent": "a LeaderAndIsr or StopReplica refused as stale is never sent again on its connection",
    # a quorum's logs against each other (several data dirs; quorum_rules)
    "quorum-log-matching": "two logs holding a batch at the same offset and epoch are identical up to it; "
    "a node's snapshots end within the committed log, at its epoch there",
    "quorum-one-leader": "the LeaderChange records and quorum-state files of one epoch name one leader",
    "quorum-epoch-order": "along each node's log, epochs never decrease and each new epoch opens with its LeaderChange",
    "quorum-acked-on-node": "every acknowledged change is in the log of every node holding the final committed offset",
    "quorum-deposed-write": "no committed batch was written after a later epoch began: none follows a batch of a "
    "higher epoch, none is stamped after the first batch of a higher epoch that follows it",
    "stale-controller-epoch": "no broker acts on a LeaderAndIsr or StopReplica of an older controller epoch than one "
    "it has seen",
    "controller-epoch-leader": "a LeaderAndIsr or StopReplica comes from the leader the LeaderChange of its "
    "controller epoch names",
    "quorum-deposed-leader": "a leader cut off from a majority resigns by check-quorum: none says it leads an epoch "
    "(DescribeQuorum) for longer than 1.5 fetch timeouts and 250 ms once a newer epoch's leader was seen",
    "quorum-stale-vote": "no voter grants a (pre-)vote to a candidate whose log is behind its own",
    "quorum-divergent-tail": "once the quorum has been whole for 3 fetch timeouts (a restart's start-up 5 s more) at "
    "the end of a run, no node holds a divergent tail",
}


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: where (log offset and/or journal entry), what (partition, broker), and why."""

    rule: str
    message: str
    offset: int | None = None
    journal: str | None = None
    partition: str | None = None
    broker: int | None = None
    records: tuple[str, ...] = ()

    def line(self) -> str:
        """One line for a terminal: rule, where, what, then the records involved."""
        where = [f"offset {self.offset}"] if self.offset is not None else []
        if self.partition is not None:
            where.append(self.partition)
        if self.broker is not None:
            where.append(f"broker {self.broker}")
        text = f"[{self.rule}] {', '.join(where)}: {self.message}" if where else f"[{self.rule}] {self.message}"
        if self.journal is not None:
            text += f" | journal: {self.journal}"
        if self.records:
            text += " | " + " ; ".join(self.records)
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "message": self.message,
            "offset": self.offset,
            "journal": self.journal,
            "partition": self.partition,
            "broker": self.broker,
            "records": list(self.records),
        }


@dataclass
class ViolationSink:
    """Collects violations: all counted per rule, the first `keep_per_rule` of each kept."""

    keep_per_rule: int = 50
    kept: list[Violation] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, violation: Violation) -> None:
        if violation.rule not in RULES:
            raise ValueError(f"unknown rule {violation.rule!r}")
        count = self.counts.get(violation.rule, 0) + 1
        self.counts[violation.rule] = count
        if count <= self.keep_per_rule:
            self.kept.append(violation)

    def count_only(self, rule: str) -> bool:
        """True, having counted one more `rule` violation, when no more of it are kept: the caller
        then skips rendering it (a broken controller can break a rule millions of times)."""
        count = self.counts.get(rule, 0)
        if count < self.keep_per_rule:
            return False
        self.counts[rule] = count + 1
        return True

    def absorb(self, other: ViolationSink) -> None:
        """Add `other`'s violations after these: every one counted, the first `keep_per_rule` of each rule kept."""
        kept = Counter(violation.rule for violation in self.kept)
        for violation in other.kept:
            if kept[violation.rule] < self.keep_per_rule:
                kept[violation.rule] += 1
                self.kept.append(violation)
        for rule, count in other.counts.items():
            self.counts[rule] = self.counts.get(rule, 0) + count

    @property
    def total(self) -> int:
        return sum(self.counts.values())

"""Leadership: who must lead after a controlled shutdown, an ONLINE replica, and an election nobody asked for.

Three decisions of semantics.md the log's own rules (`rules`) cannot see record by record, judged
per batch (`on_batch_end`: a metadata transaction's records all take effect in its End's batch, so
what one operation writes is judged together):

Rules (ids in violations.RULES):
- The first two are fencer's own decisions where Kafka's KRaft controller decides otherwise (it
  makes a shutting-down sole leader's partition leaderless; it has no AlterReplicaState): they
  are judged only for a fleet run's journal (a RunStarted), never on a log alone, so that a data
  dir Kafka wrote (`python -m broker_sim check DIR`, `make check-kafka-dirs`) is not held to them.
- `shutdown-keeps-sole-leader` (ControlledShutdown step 4, fencer's ZooKeeper-era rule over
  KRaft's leaderless outcome): a partition its leader led when the log flagged the leader in
  controlled shutdown (BrokerRegistrationChangeRecord InControlledShutdown=1, unfenced; or so in
  the base snapshot) is never left leaderless while that incarnation is in controlled shutdown,
  unfenced and its replica online: the leadership moves to an eligible ISR member or stays. At the
  end of each batch that changes such a partition: leader -1 is the violation, unless by then the
  broker is fenced (the fencing's own records, in the same batch or transaction, make a sole
  leader leaderless rightly), another incarnation, out of controlled shutdown, its replica
  offline (its directory LOST), or no longer a replica. A partition it no longer leads is no
  longer followed.
- `online-elects` (README "What it decides": AlterReplicaState ONLINE on a leaderless partition
  whose ISR holds the replica elects it): a batch that brings a replica back online (its directory
  no longer LOST) on a partition that was leaderless with that replica in its ISR before the batch
  must not leave it leaderless while the replica is in the ISR, online and its broker active
  (registered, unfenced, not in controlled shutdown). A registration brings a new incarnation's
  replicas online fenced: not active, nothing owed (its unfence elects it).
- `unclean-unasked` (ElectLeaders: a preferred election never falls back to an unclean one;
  nothing in fencer but an UNCLEAN ElectLeaders elects from outside the ISR or sets RECOVERING):
  judged only for a fleet run's journal (a RunStarted). Each unclean election of the log
  (`partition_rules.UncleanElection`: a new leader not in the ISR before its record, or RECOVERING
  set) stamped between the journal's first run start and its last run end (+ `SLACK_MS`) must
  match an UNCLEAN ElectLeaders the fleet sent for that topic name and partition
  (`admin_probe`, `detail.election_type` 1; a request naming no topic matches any) whose flight
  covers its timestamp within `SLACK_MS`: from `sent_wall_ns` to `wall_ns` (the answer), or
  from `sent_wall_ns` on when no answer came (the request may still be decided). The fleet's
  own elections are PREFERRED. Excused: an election after the journal's last `admin_probe` entry
  (admin probes go one at a time, and one cut by the run's end leaves no entry). Elections
  outside the runs (a log older than the journal) are not judged.
- State kept: the partitions of each shutting-down leader (few), and the partitions with an
  offline replica (their offline set, leader and ISR at the last batch end); a partition whose
  topic is gone is dropped when next met.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from broker_sim.journal import AdminProbe, Entry, RunEnded, RunStarted
from protocol.records.metadata import NO_LEADER, BrokerRegistrationChangeRecord
from protocol.spec import Data

from .events import LogEnd, RecordHandler, SnapshotRecords, Subscriber
from .liveness import NS_PER_MS
from .log import Batch, SnapshotFile
from .rules import LogRules
from .state import NO_OFFLINE, Model, Partition
from .violations import Violation

UNCLEAN = 1  # ElectLeaders' election type
SLACK_MS = 1000  # the controller's and the fleet's clock readings, on one machine


class Offline(NamedTuple):
    """A partition with offline replicas, as the last batch left it."""

    offline: frozenset[int]
    leader: int
    isr: tuple[int, ...]


class Asked(NamedTuple):
    """An UNCLEAN ElectLeaders the fleet sent: its partition (topic None: every one) and flight (ms)."""

    topic: str | None
    partition: int | None
    sent_ms: int
    answered_ms: int | None  # None: no answer came


class Leadership(Subscriber):
    """See the module rules."""

    name = "leadership"
    wants_changes = True

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.image = image
        self.shutting: dict[Partition, tuple[int, int]] = {}  # partition -> (its leader in shutdown, broker epoch)
        self.offline: dict[Partition, Offline] = {}
        self.asked: list[Asked] = []
        self.last_probe_ms: int | None = None
        self.run_start_ms: int | None = None
        self.run_end_ms: int | None = None
        self.judged: Counter[str] = Counter()

    # ------------------------------------------------------------------ the journal
    def on_journal_entry(self, entry: Entry) -> None:
        if isinstance(entry, AdminProbe):
            ms = entry.wall_ns // NS_PER_MS
            self.last_probe_ms = ms if self.last_probe_ms is None else max(self.last_probe_ms, ms)
            if entry.api == "ElectLeaders" and entry.detail.get("election_type") == UNCLEAN:
                topic, partition = entry.detail.get("topic"), entry.detail.get("partition")
                answered = ms if entry.errors else None
                self.asked.append(
                    Asked(
                        topic if isinstance(topic, str) else None,
                        partition if isinstance(partition, int) else None,
                        entry.sent_wall_ns // NS_PER_MS,
                        answered,
                    )
                )
        elif isinstance(entry, RunStarted):
            ms = entry.wall_ns // NS_PER_MS
            self.run_start_ms = ms if self.run_start_ms is None else min(self.run_start_ms, ms)
        elif isinstance(entry, RunEnded):
            ms = entry.wall_ns // NS_PER_MS
            self.run_end_ms = ms if self.run_end_ms is None else max(self.run_end_ms, ms)

    def record_handlers(self) -> Mapping[type, RecordHandler]:
        return {BrokerRegistrationChangeRecord: self.broker_change}

    # ------------------------------------------------------------------ the log
    def on_base_snapshot(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        model = self.image.model
        for broker in model.brokers.values():
            if broker.shutting_down and not broker.fenced:
                self._follow_leads(model, broker.broker_id, broker.epoch)
        for topic in model.topics.values():
            for partition in topic.partitions.values():
                if partition.offline:
                    self.offline[partition] = Offline(partition.offline, partition.leader, partition.isr)

    def broker_change(self, offset: int, record: Data) -> None:
        assert isinstance(record, BrokerRegistrationChangeRecord)
        model = self.image.model
        broker = model.brokers.get(record.broker_id)
        if (
            record.in_controlled_shutdown == 1
            and broker is not None
            and broker.epoch == record.broker_epoch
            and broker.shutting_down
            and not broker.fenced
        ):
            self._follow_leads(model, broker.broker_id, broker.epoch)

    def _follow_leads(self, model: Model, broker_id: int, epoch: int) -> None:
        for partition in model.leads.get(broker_id, ()):
            self.shutting[partition] = (broker_id, epoch)

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        if not changed or self.run_start_ms is None:  # fencer's decisions: judged in fleet runs only
            return
        shutting, offline = self.shutting, self.offline
        if shutting:
            for partition in changed:
                if partition in shutting:
                    self._judge_shutdown(partition, batch)
        for partition in changed:
            before = offline.get(partition) if offline else None
            if before is not None:
                self._judge_online(partition, before, batch)
            if partition.offline:
                offline[partition] = Offline(partition.offline, partition.leader, partition.isr)
            elif before is not None:
                del offline[partition]

    def _gone(self, partition: Partition) -> bool:
        topic = self.image.model.topics.get(partition.topic.topic_id.int)
        return topic is not partition.topic or topic.partitions.get(partition.index) is not partition

    def _judge_shutdown(self, partition: Partition, batch: Batch) -> None:
        broker_id, epoch = self.shutting[partition]
        if partition.leader == broker_id:
            return
        del self.shutting[partition]
        if partition.leader != NO_LEADER or self._gone(partition):
            return
        self.judged["shutdown-keeps-sole-leader"] += 1
        broker = self.image.model.brokers.get(broker_id)
        if (
            broker is None
            or broker.epoch != epoch
            or broker.fenced
            or not broker.shutting_down
            or broker_id in partition.offline
            or broker_id not in partition.replica_set
        ):
            return
        self._violation(
            "shutdown-keeps-sole-leader",
            f"made leaderless (ISR {list(partition.isr)}) while its leader {broker_id} is in controlled shutdown, "
            "unfenced, its replica online: the leadership moves to an eligible ISR member or stays",
            batch,
            partition,
            broker_id,
        )

    def _judge_online(self, partition: Partition, before: Offline, batch: Batch) -> None:
        back = before.offline - (partition.offline or NO_OFFLINE)
        if not back or before.leader != NO_LEADER:
            return
        model = self.image.model
        for replica in sorted(back):
            if replica not in before.isr:
                continue
            self.judged["online-elects"] += 1
            if partition.leader != NO_LEADER or self._gone(partition):
                continue
            if replica in partition.isr and replica in partition.replica_set and model.is_active(replica):
                self._violation(
                    "online-elects",
                    f"broker {replica}'s replica is back online, in the ISR {list(partition.isr)} of a leaderless "
                    "partition, its broker active, and is not elected",
                    batch,
                    partition,
                    replica,
                )

    def _violation(self, rule: str, message: str, batch: Batch, partition: Partition, broker: int) -> None:
        if self.sink.count_only(rule):
            return
        where = f"batch @{batch.base_offset} (ends at {batch.base_offset + len(batch.records) - 1})"
        self.sink.add(
            Violation(rule, message, batch.base_offset, partition=partition.label, broker=broker, records=(where,))
        )

    # ------------------------------------------------------------------ unclean elections
    def on_log_end(self, end: LogEnd) -> None:
        if self.run_start_ms is None:
            return
        start = self.run_start_ms
        stop = None if self.run_end_ms is None else self.run_end_ms + SLACK_MS
        for election in self.image.history.unclean:
            at = election.timestamp_ms
            if at < start or (stop is not None and at > stop):
                continue
            self.judged["unclean-unasked"] += 1
            if self.last_probe_ms is not None and at > self.last_probe_ms:
                continue
            if any(self._asked_for(asked, election.topic_name, election.partition, at) for asked in self.asked):
                continue
            why = "sets RECOVERING" if election.recovering else f"is not in the ISR {list(election.isr_before)}"
            if not self.sink.count_only("unclean-unasked"):
                self.sink.add(
                    Violation(
                        "unclean-unasked",
                        f"broker {election.leader} is elected leader and {why}: an unclean election, and the "
                        "fleet sent no UNCLEAN ElectLeaders for the partition then",
                        election.offset,
                        partition=election.label,
                        broker=election.leader,
                        records=(election.rendering,),
                    )
                )

    @staticmethod
    def _asked_for(asked: Asked, topic: str, partition: int, at: int) -> bool:
        if asked.topic is not None and (asked.topic != topic or asked.partition not in (None, partition)):
            return False
        if at < asked.sent_ms - SLACK_MS:
            return False
        return asked.answered_ms is None or at <= asked.answered_ms + SLACK_MS

    def counts(self) -> Mapping[str, int]:
        return {f"judged {rule}": count for rule, count in self.judged.items()}

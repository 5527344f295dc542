"""Metadata logs for the checker's tests: hand-built with `protocol` (`LogBuilder`), or correct histories
written by the real controller core (`ControllerLog`: the harness's decisions appended to a real
`MetadataLog`). The checker itself never imports `controller`; its tests may, to produce logs."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

from broker_sim.check import CheckResult, check
from broker_sim.journal import Entry
from controller.log import MetadataLog
from protocol.records.batch_writer import metadata_batch
from protocol.records.control import LeaderChangeMessage, LeaderChangeMessageVoter, control_batch
from protocol.records.metadata import (
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    latest_version,
)
from protocol.records.metadata_value import encode_metadata_value
from protocol.spec import Data
from tests.controller.harness import Harness

PARTITION_DIR = "__cluster_metadata-0"
TOPIC_ID = uuid.UUID("6b1a2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
OTHER_TOPIC_ID = uuid.UUID("7c2b3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e")
TIMESTAMP_MS = 1_700_000_000_000


def incarnation(broker_id: int, generation: int = 0) -> uuid.UUID:
    return uuid.UUID(int=(broker_id << 32) | (generation + 1))


class LogBuilder:
    """Batches appended in offset order into segments (one unless `roll` starts another); `write` saves them."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.segments: list[tuple[int, bytearray]] = [(0, bytearray())]
        self.next_offset = 0
        self.epoch = 0
        self.timestamp_ms = TIMESTAMP_MS
        self.epochs: dict[int, int] = {}  # broker id -> epoch of its last registration

    def leader_change(self, epoch: int | None = None) -> int:
        """A LeaderChange control batch at `epoch` (default: the next one); its offset."""
        self.epoch = self.epoch + 1 if epoch is None else epoch
        voter = LeaderChangeMessageVoter(voter_id=1)
        message = LeaderChangeMessage(version=0, leader_id=1, voters=(voter,), granting_voters=(voter,))
        return self._add(control_batch(self.next_offset, self.epoch, self.timestamp_ms, [(message, 0)]), 1)

    def batch(self, *records: Data, epoch: int | None = None) -> int:
        """One batch of `records` (each at its latest version), at the current epoch unless given; its offset."""
        values = [encode_metadata_value(record, latest_version(type(record))) for record in records]
        data = metadata_batch(self.next_offset, self.epoch if epoch is None else epoch, self.timestamp_ms, values)
        return self._add(data, len(values))

    def _add(self, data: bytes, count: int) -> int:
        offset = self.next_offset
        self.segments[-1][1].extend(data)
        self.next_offset += count
        self.timestamp_ms += 10
        return offset

    def roll(self) -> None:
        self.segments.append((self.next_offset, bytearray()))

    def write(self) -> Path:
        directory = self.data_dir / PARTITION_DIR
        directory.mkdir(parents=True, exist_ok=True)
        for base_offset, data in self.segments:
            (directory / f"{base_offset:020d}.log").write_bytes(bytes(data))
        return self.data_dir

    def segment_path(self, index: int = -1) -> Path:
        return self.data_dir / PARTITION_DIR / f"{self.segments[index][0]:020d}.log"

    # ------------------------------------------------------------------ common records
    def register(
        self,
        broker_id: int,
        generation: int = 0,
        *,
        epoch: int | None = None,
        fenced: bool = True,
        shutdown: bool = False,
    ) -> int:
        """A RegisterBrokerRecord in its own batch, epoch = its offset unless given; the epoch."""
        epoch = self.next_offset if epoch is None else epoch
        record = RegisterBrokerRecord(
            broker_id=broker_id,
            incarnation_id=incarnation(broker_id, generation),
            broker_epoch=epoch,
            fenced=fenced,
            in_controlled_shutdown=shutdown,
        )
        self.batch(record)
        self.epochs[broker_id] = epoch
        return epoch

    def change_broker(self, broker_id: int, **fields: int) -> int:
        record = BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=self.epochs[broker_id], **fields)
        return self.batch(record)

    def cluster(self, brokers: tuple[int, ...] = (1, 2, 3, 4)) -> None:
        """Epoch 1, the brokers registered and unfenced, topic `t` (TOPIC_ID) with partitions 0 and 1 on
        replicas [1, 2, 3] and [2, 3, 4], every replica in the ISR, led by the first."""
        self.leader_change(1)
        for broker_id in brokers:
            self.register(broker_id)
        for broker_id in brokers:
            self.change_broker(broker_id, fenced=-1)
        self.batch(
            TopicRecord(name="t", topic_id=TOPIC_ID),
            PartitionRecord(
                partition_id=0,
                topic_id=TOPIC_ID,
                replicas=(1, 2, 3),
                isr=(1, 2, 3),
                leader=1,
                leader_epoch=0,
                partition_epoch=0,
            ),
            PartitionRecord(
                partition_id=1,
                topic_id=TOPIC_ID,
                replicas=(2, 3, 4),
                isr=(2, 3, 4),
                leader=2,
                leader_epoch=0,
                partition_epoch=0,
            ),
        )

    def change(self, partition: int = 0, *, epoch: int | None = None, **fields: object) -> int:
        """A PartitionChangeRecord of partition `partition` of `t` in its own batch; its offset."""
        record = PartitionChangeRecord(partition_id=partition, topic_id=TOPIC_ID, **fields)  # type: ignore[arg-type]
        return self.batch(record, epoch=epoch)


class ControllerLog:
    """The real controller core deciding (tests.controller.harness) and a real `MetadataLog` on disk
    holding each committed batch, so that a test can write a correct history step by step."""

    def __init__(self, data_dir: Path, *, segment_bytes: int = 1 << 30) -> None:
        self.harness = Harness()
        self.log = MetadataLog.open(data_dir, cluster_id="fencer-check-tests", segment_bytes=segment_bytes, fsync=False)
        self.log.append_leader_change(1, 1, TIMESTAMP_MS)
        self.written = 0  # harness batches already on disk
        self.records = 0  # harness log entries already on disk
        self.timestamp_ms = TIMESTAMP_MS

    def flush(self) -> None:
        """Append the batches the harness committed since the last flush, one batch each."""
        harness = self.harness
        for batch in harness.batches[self.written :]:
            group = [(record, version) for record, version, _ in harness.log[self.records : self.records + len(batch)]]
            self.timestamp_ms += 10
            self.log.append([group], self.log.last_epoch, self.timestamp_ms)
            self.records += len(batch)
        self.written = len(harness.batches)

    def restart(self) -> None:
        """A controller restart: a fresh core replayed from the records, sessions restarted, a new epoch."""
        self.flush()
        self.harness.core = self.harness.replayed()
        self.harness.core.rng = random.Random(self.log.last_epoch)  # not the first core's topic ids again
        self.harness.core.start_sessions(self.harness.now_ns)
        self.log.append_leader_change(self.log.last_epoch + 1, 1, self.timestamp_ms)

    def snapshot(self) -> int:
        """A snapshot of the core's state at the log's end; its end offset."""
        self.flush()
        end = self.log.next_offset
        self.log.write_snapshot(end, self.log.last_epoch, self.harness.core.snapshot_records(), self.timestamp_ms)
        return end

    def close(self) -> None:
        self.flush()
        self.log.close()

    @staticmethod
    def reopen(data_dir: Path, *, segment_bytes: int = 1 << 30) -> MetadataLog:
        return MetadataLog.open(data_dir, cluster_id="fencer-check-tests", segment_bytes=segment_bytes, fsync=False)


def write_churn_log(
    data_dir: Path, *, brokers: int, topics: int, partitions: int, changes: int, seed: int = 0, per_batch: int = 20
) -> int:
    """A correct log of ISR churn at scale (the shape of a fleet benchmark's log): brokers registered
    and unfenced, topics of RF 3 placed round-robin, then `changes` ISR shrinks and expansions by the
    leaders, `per_batch` per batch, with a broker bounced every 1,000 changes (out of its ISRs and
    leaderships, fenced, re-registered, unfenced, electing itself where a partition lost its leader).
    Returns the number of records written."""
    rng = random.Random(seed)
    log = LogBuilder(data_dir)
    log.leader_change(1)
    for broker_id in range(brokers):
        log.register(broker_id)
    for broker_id in range(brokers):
        log.change_broker(broker_id, fenced=-1)
    state: dict[tuple[uuid.UUID, int], Churned] = {}
    for topic in range(topics):
        topic_id = uuid.UUID(int=rng.getrandbits(128))
        created: list[Data] = [TopicRecord(name=f"topic-{topic}", topic_id=topic_id)]
        for index in range(partitions):
            first = (topic * partitions + index) % brokers
            replicas = tuple((first + k) % brokers for k in range(3))
            state[(topic_id, index)] = Churned(replicas, list(replicas), replicas[0])
            created.append(
                PartitionRecord(
                    partition_id=index, topic_id=topic_id, replicas=replicas, isr=replicas, leader=replicas[0],
                    leader_epoch=0, partition_epoch=0,
                )
            )  # fmt: skip
        log.batch(*created)
    keys = list(state)
    pending: list[Data] = []
    for change in range(changes):
        key = rng.choice(keys)
        part = state[key]
        if len(part.isr) == 3:
            part.isr.remove(rng.choice([r for r in part.isr if r != part.leader]))
        elif part.leader != -1:
            part.isr.append(next(r for r in part.replicas if r not in part.isr))
        pending.append(PartitionChangeRecord(partition_id=key[1], topic_id=key[0], isr=tuple(part.isr)))
        if len(pending) >= per_batch or change == changes - 1:
            log.batch(*pending)
            pending = []
        if change % 1000 == 999:
            _bounce(log, rng.randrange(brokers), state)
    log.write()
    return log.next_offset


class Churned:
    __slots__ = ("isr", "leader", "replicas")

    def __init__(self, replicas: tuple[int, ...], isr: list[int], leader: int) -> None:
        self.replicas, self.isr, self.leader = replicas, isr, leader


def _bounce(log: LogBuilder, broker_id: int, state: dict[tuple[uuid.UUID, int], Churned]) -> None:
    """Fence `broker_id` as a controller does (out of every ISR but as the last member, its
    leaderships to the first other ISR member or nobody), bounce it, unfence it."""
    changes: list[Data] = []
    for (topic_id, index), part in state.items():
        if broker_id not in part.isr:
            continue
        fields: dict[str, object] = {}
        if len(part.isr) > 1:
            part.isr.remove(broker_id)
            fields["isr"] = tuple(part.isr)
        if part.leader == broker_id:
            part.leader = next((r for r in part.replicas if r in part.isr and r != broker_id), -1)
            fields["leader"] = part.leader
        changes.append(PartitionChangeRecord(partition_id=index, topic_id=topic_id, **fields))  # type: ignore[arg-type]
    if changes:
        log.batch(*changes)
    log.change_broker(broker_id, fenced=1)
    log.register(broker_id, generation=log.next_offset)
    log.change_broker(broker_id, fenced=-1)
    elected: list[Data] = []
    for (topic_id, index), part in state.items():
        if part.leader == -1 and broker_id in part.isr:
            part.leader = broker_id
            elected.append(PartitionChangeRecord(partition_id=index, topic_id=topic_id, leader=broker_id))
    if elected:
        log.batch(*elected)


def rules(result: CheckResult) -> list[str]:
    """The rules a check reported, sorted (one name per violation)."""
    return sorted(violation.rule for violation in result.violations)


def checked_cluster(tmp_path: Path, journal: list[Entry], log: LogBuilder | None = None) -> CheckResult:
    """`journal` checked against `log` (by default `LogBuilder.cluster()` under tmp_path/data)."""
    if log is None:
        log = LogBuilder(tmp_path / "data")
        log.cluster()
    log.write()
    return check(tmp_path / "data", journal)

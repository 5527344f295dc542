"""Acceptance check: fencer adopts a KRaft data dir that Apache Kafka wrote.

    .venv/bin/python tests/kafka_dirs/adopt.py DIR [DIR ...] [--session-timeout-ms MS] [--keep]
    make check-kafka-dirs KAFKA_DIRS="DIR [DIR ...]"

Each DIR (`meta.properties`, optionally `bootstrap.checkpoint`, `__cluster_metadata-0/` with
`*.log` segments, `*.checkpoint` snapshots and `quorum-state`) is copied to a temporary directory
and every step works on the copy; DIR itself is only read (the last check says it is unchanged).
One line per check, `PASS`, `FAIL` or `SKIP` (a step that does not apply, e.g. AlterPartition on a
log without partitions); the exit status is 1 when any check of any DIR failed, and the last
lines name each failure.

1. `dump-log`: `python -m controller dump-log COPY` exits 0 and prints no decode error (nor `Found N
   invalid bytes`).
2. `check`: `python -m broker_sim check COPY` passes and skipped no record (its line says how many
   snapshots the checker held to the log replayed to their offset).
3. `expectation`: the cluster the log describes, replayed by broker_sim's checker model
   (`broker_sim.check`: `LogReader`, `LogRules`, `Model`, `load_base`), never `controller` code:
   brokers (epoch, incarnation, fenced, in controlled shutdown), topics (names, ids), partitions
   (replicas, ISR, leader, leader epoch, partition epoch, recovery state, offline replicas), the
   log's controller epoch and end offset. As `check` does, replay starts at offset 0, or at the
   oldest snapshot covering the segments when older ones were deleted. A log that ends below its
   newest snapshot restarts at that snapshot (Kafka's `KafkaMetadataLog` truncates to it on
   start-up, and so does fencer's controller): the expectation is then that snapshot's state.
4. `daemon`, `state-*`: `python -m controller --data-dir COPY --listen 127.0.0.1:0 --metrics-listen
   127.0.0.1:PORT` starts (its line quotes the daemon's start-up line: what it replayed, from a
   snapshot or the whole log), and its `/state` shows the expected cluster id and node id (from
   `meta.properties`), brokers, topics and partitions exactly; what a start legitimately changes
   (README, "What it decides" and "The metadata log"): a new controller epoch above both the log's
   and `quorum-state`'s `leaderEpoch`, opened by a LeaderChange at the log's end offset (so
   `last_applied_offset` is that offset).
5. Every broker of the log comes back over TCP (kio 0.5.0, an independent codec: tests/e2e):
   `register` (BrokerRegistration v4: the cluster id, a new incarnation, a listener served by
   broker_sim's control listener, the log dirs it registered in the log) gets a broker epoch
   above its old one; a broker the log left unfenced still holds a session from the controller's
   start, so it is answered DUPLICATE_BROKER_REGISTRATION (semantics.md) until that session
   expires, and is retried. `unfence`: BrokerHeartbeat v1 until unfenced; heartbeats then go on in
   a thread. `leader-and-isr`: each broker's listener holds the state `/state` shows for every
   partition it hosts (the full LeaderAndIsr of a new incarnation). `alter-partition` (v3, with the
   members' broker epochs): the leader of a partition, preferring one whose ISR has several
   members, shrinks it by one member (answered NONE, partition epoch + 1) or sends the same
   one-member ISR (answered NONE with the state unchanged: semantics.md, "A request that changes
   nothing"). `controlled-shutdown` (v3) of the broker leading the most partitions: NONE, with
   RemainingPartitions exactly the partitions of more than one replica it leads with no eligible
   successor in the ISR (semantics.md, ControlledShutdown); its next heartbeat says ShouldShutDown
   when none remain; `/state` shows it in controlled shutdown, leading only those.
   `heartbeats`: every heartbeat of the thread was answered NONE.
6. `sigterm`: the daemon exits 0 on SIGTERM; `check-after`: `broker_sim check` passes on the copy,
   now holding the controller's own records too. `source-unchanged`: DIR's files are as before.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `tests` is not installed: the repository root

from broker_sim.check.log import CheckError, LogReader, SnapshotFile, SnapshotProblem
from broker_sim.check.rules import LogRules
from broker_sim.check.snapshot import load_base
from broker_sim.check.state import Model
from broker_sim.check.violations import ViolationSink
from protocol.error_codes import ErrorCode, error_name
from protocol.records.metadata import RegisterBrokerRecord
from protocol.spec import Data
from tests.e2e import kio_messages as m
from tests.e2e.daemon_process import ROOT, DaemonProcess, free_port
from tests.e2e.kio_client import KioClient
from tests.e2e.listener_thread import ListenerThread

#: what dump-log prints about a record it cannot decode, or a batch it cannot read (`Found N invalid bytes ...`)
DECODE_ERRORS = ("Error at", "skipping", "cannot be decoded", "invalid bytes")
DEFAULT_SESSION_TIMEOUT_MS = 6000
#: the features a Kafka 3.9 broker registers (metadata.version 3.0-IV1 .. 3.9-IV0)
BROKER_FEATURES = (("metadata.version", 1, 21),)
LISTENER_NAME = "PLAINTEXT"
DELIVERY_TIMEOUT_S = 15.0
UNFENCE_TIMEOUT_S = 10.0


# ---------------------------------------------------------------------------- what the log says
@dataclass(frozen=True)
class BrokerFacts:
    epoch: int
    incarnation: str
    fenced: bool
    in_controlled_shutdown: bool


@dataclass(frozen=True)
class PartitionFacts:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int
    offline_replicas: tuple[int, ...]  # sorted


@dataclass
class Expectation:
    """The cluster at the end of the log, as broker_sim's checker model replays it."""

    brokers: dict[int, BrokerFacts] = field(default_factory=dict)
    topics: dict[str, str] = field(default_factory=dict)  # name -> topic id (UUID text)
    partitions: dict[tuple[str, int], PartitionFacts] = field(default_factory=dict)
    controller_epoch: int = -1  # the log's (or the restart snapshot's)
    end_offset: int = 0
    log_dirs: dict[int, tuple[uuid.UUID, ...]] = field(default_factory=dict)  # as each broker last registered
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{len(self.brokers)} broker(s), {len(self.topics)} topic(s), {len(self.partitions)} partition(s) "
            f"at offset {self.end_offset}, controller epoch {self.controller_epoch}"
        )


def expect(data_dir: Path) -> Expectation:
    """Replay the log of `data_dir` into broker_sim's checker model (see the module docstring, step 3)."""
    expectation = Expectation()
    with LogReader(data_dir) as reader:
        reading = reader.reading
        rules = LogRules(Model(), ViolationSink())
        first = reading.segments[0][0] if reading.segments else None
        start = 0
        if first != 0:  # as `broker_sim check` starts: the oldest snapshot covering the segments
            candidates = [s for s in reading.snapshots if first is None or s.end_offset >= first]
            for snapshot in candidates if first is not None else candidates[-1:]:
                records = _snapshot_records(reader, snapshot, expectation)
                if records is not None:
                    load_base(rules, snapshot, records)
                    _note_log_dirs(expectation, (record for record, _ in records))
                    start = snapshot.end_offset
                    expectation.notes.append(f"replayed from {snapshot.path.name}")
                    break
            else:
                expectation.problems.append(f"the log starts at offset {first} and no snapshot covers it")
                return expectation
        for batch in reader.batches(start):
            rules.batch(batch)
            _note_log_dirs(expectation, (record for _, record, _ in batch.records))
        end = reading.end_offset
        newest = reading.snapshots[-1] if reading.snapshots else None
        if newest is not None and newest.end_offset > end and reading.complete:
            records = _snapshot_records(reader, newest, expectation)
            if records is not None:  # Kafka's (and fencer's) start-up: the log restarts at the newest snapshot
                rules = LogRules(Model(), ViolationSink())
                load_base(rules, newest, records)
                expectation.log_dirs.clear()
                _note_log_dirs(expectation, (record for record, _ in records))
                expectation.notes.append(
                    f"the log ends at offset {end}, below snapshot {newest.path.name}: a start restarts the log "
                    "there (Kafka's KafkaMetadataLog, and fencer's controller), so the snapshot is the expectation"
                )
                end = newest.end_offset
        expectation.problems.extend(reading.problems)
        expectation.notes.extend(reading.notes)
        if (note := rules.open_transaction_note()) is not None:
            expectation.notes.append(note)
    _fill(expectation, rules.model, end)
    return expectation


def _snapshot_records(
    reader: LogReader, snapshot: SnapshotFile, expectation: Expectation
) -> list[tuple[Data, int]] | None:
    try:
        return reader.read_snapshot(snapshot)
    except SnapshotProblem as exc:
        expectation.problems.append(f"corrupt snapshot: {exc}")
        return None


def _note_log_dirs(expectation: Expectation, records: Iterable[Data]) -> None:
    for record in records:
        if isinstance(record, RegisterBrokerRecord):
            expectation.log_dirs[record.broker_id] = tuple(record.log_dirs)


def _fill(expectation: Expectation, model: Model, end: int) -> None:
    expectation.end_offset = end
    expectation.controller_epoch = model.controller_epoch
    for broker_id, broker in model.brokers.items():
        expectation.brokers[broker_id] = BrokerFacts(
            broker.epoch, str(broker.incarnation), broker.fenced, broker.shutting_down
        )
    for topic in model.topics.values():
        expectation.topics[topic.name] = str(topic.topic_id)
        for index, partition in topic.partitions.items():
            expectation.partitions[(topic.name, index)] = PartitionFacts(
                partition.replicas,
                partition.isr,
                partition.leader,
                partition.leader_epoch,
                partition.partition_epoch,
                partition.recovery,
                tuple(sorted(partition.offline)),
            )


# ---------------------------------------------------------------------------- what /state says
def state_brokers(document: dict[str, Any]) -> dict[int, BrokerFacts]:
    return {
        b["id"]: BrokerFacts(b["epoch"], b["incarnation_id"], b["fenced"], b["in_controlled_shutdown"])
        for b in document["brokers"]
    }


def state_topics(document: dict[str, Any]) -> dict[str, str]:
    return {t["name"]: t["topic_id"] for t in document["topics"]}


def state_partitions(document: dict[str, Any]) -> dict[tuple[str, int], PartitionFacts]:
    return {
        (t["name"], p["partition"]): PartitionFacts(
            tuple(p["replicas"]),
            tuple(p["isr"]),
            p["leader"],
            p["leader_epoch"],
            p["partition_epoch"],
            p["leader_recovery_state"],
            tuple(sorted(p["offline_replicas"])),
        )
        for t in document["topics"]
        for p in t["partitions"]
    }


def differences(what: str, expected: dict[Any, Any], actual: dict[Any, Any], shown: int = 5) -> list[str]:
    """What differs between two mappings, one line per key (the first `shown`, then a count)."""
    lines = []
    for key in sorted(set(expected) | set(actual), key=repr):
        if key not in actual:
            lines.append(f"{what} {key}: missing from /state (the log has {expected[key]})")
        elif key not in expected:
            lines.append(f"{what} {key}: not in the log (/state has {actual[key]})")
        elif expected[key] != actual[key]:
            lines.append(f"{what} {key}: the log has {expected[key]}, /state {actual[key]}")
    if len(lines) > shown:
        lines = [*lines[:shown], f"... and {len(lines) - shown} more"]
    return lines


def compare_state(expectation: Expectation, document: dict[str, Any]) -> dict[str, list[str]]:
    """The differences between the expectation and a /state document, by check (brokers, topics, partitions)."""
    return {
        "state-brokers": differences("broker", expectation.brokers, state_brokers(document)),
        "state-topics": differences("topic", expectation.topics, state_topics(document)),
        "state-partitions": differences("partition", expectation.partitions, state_partitions(document)),
    }


def fetch_state(metrics_port: int, timeout: float = 20.0) -> dict[str, Any]:
    """GET /state, retried until the HTTP listener answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/state", timeout=30) as response:
                document: dict[str, Any] = json.loads(response.read())
                return document
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


# ---------------------------------------------------------------------------- the report
@dataclass
class Report:
    """One line per check; the failures are named again at the end."""

    label: str = ""
    failures: list[str] = field(default_factory=list)
    checks: int = 0

    def line(self, status: str, name: str, detail: str) -> None:
        print(f"{status} {name}: {detail}", flush=True)

    def check(self, name: str, ok: bool, detail: str) -> bool:
        self.checks += 1
        self.line("PASS" if ok else "FAIL", name, detail)
        if not ok:
            self.failures.append(f"{self.label}: {name}")
        return ok

    def skip(self, name: str, why: str) -> None:
        self.line("SKIP", name, why)


# ---------------------------------------------------------------------------- steps 1 and 2: the tools
def run_tool(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def dump_log(report: Report, copy: Path) -> None:
    done = run_tool("controller", "dump-log", str(copy))
    bad = [line for line in done.stdout.splitlines() if any(error in line for error in DECODE_ERRORS)]
    batches = sum(1 for line in done.stdout.splitlines() if line.startswith("baseOffset:"))
    detail = f"exit {done.returncode}, {batches:,} batches printed"
    if bad:
        detail += f", {len(bad)} error line(s), the first: {bad[0][:300]}"
    elif done.returncode != 0:
        detail += ": " + " | ".join((done.stdout.splitlines()[-1:] or [""]) + done.stderr.splitlines()[-2:])[:500]
    else:
        detail += ", no decode error"
    report.check("dump-log", done.returncode == 0 and not bad, detail)


def broker_sim_check(report: Report, name: str, copy: Path, scratch: Path) -> None:
    """`python -m broker_sim check COPY`: exit 0, and no skipped record (its report's notes)."""
    report_path = scratch / f"{name}.json"
    done = run_tool("broker_sim", "check", str(copy), "--report", str(report_path))
    lines = done.stdout.splitlines()
    try:
        checked = json.loads(report_path.read_text())
        notes, compared = checked["notes"], checked["counts"].get("snapshots_compared", 0)
    except (OSError, ValueError, KeyError, AttributeError):
        notes, compared = [], 0
    skipped = [note for note in notes if "skipped" in note]
    detail = f"exit {done.returncode}: " + " | ".join(
        lines[:1] + [line for line in lines[1:] if line != "OK: no violations"]
    )
    if done.stderr.strip():
        detail += " | " + done.stderr.strip().splitlines()[-1]
    if done.returncode == 0 and not skipped:
        detail = (
            f"exit 0: {lines[0] if lines else ''}; no skipped record; "
            f"{compared} snapshot(s) held to the log replayed to their offset"
        )
    report.check(name, done.returncode == 0 and not skipped, detail[:1500])


# ---------------------------------------------------------------------------- files of the data dir
def read_properties(path: Path) -> dict[str, str]:
    properties = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith(("#", "!")) and "=" in line:
            key, _, value = line.partition("=")
            properties[key.strip()] = value.strip()
    return properties


def quorum_epoch(data_dir: Path) -> int:
    """quorum-state's leaderEpoch (-1 when there is none, or it cannot be read)."""
    try:
        return int(json.loads((data_dir / "__cluster_metadata-0" / "quorum-state").read_text())["leaderEpoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def digest(directory: Path) -> dict[str, str]:
    """Every file under `directory` by relative path: its SHA-256."""
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


# ---------------------------------------------------------------------------- step 5: the brokers come back
class Heartbeater:
    """Heartbeats the brokers handed to it every `interval` seconds on its own connection (as a
    broker's lifecycle thread does), so that none is fenced by its session while the checks run."""

    def __init__(self, port: int, interval: float) -> None:
        self.port = port
        self.interval = interval
        self.brokers: dict[int, tuple[int, bool]] = {}  # id -> (epoch, want shut down)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.sent = 0
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, name="heartbeats", daemon=True)
        self.thread.start()

    def add(self, broker_id: int, epoch: int, want_shut_down: bool = False) -> None:
        with self.lock:
            self.brokers[broker_id] = (epoch, want_shut_down)

    def _run(self) -> None:
        try:
            with KioClient(self.port) as client:
                while not self.stopping.wait(self.interval):
                    with self.lock:
                        brokers = dict(self.brokers)
                    for broker_id, (epoch, shut_down) in sorted(brokers.items()):
                        request = m.broker_heartbeat(1, broker_id, epoch, offset=epoch, want_shut_down=shut_down)
                        response = client.request(request)
                        self.sent += 1
                        if response.error_code != ErrorCode.NONE:
                            self.errors.append(f"broker {broker_id}: {error_name(response.error_code)}")
        except Exception as exc:  # reported by the `heartbeats` check
            self.errors.append(f"the heartbeat connection failed: {exc!r}")

    def stop(self) -> None:
        """Stop after one more round of heartbeats (up to two intervals): a run shorter than an
        interval still has its brokers' heartbeats answered, not a check of none."""
        with self.lock:
            wanted = self.sent + len(self.brokers)
        deadline = time.monotonic() + 2 * self.interval + 5
        while self.sent < wanted and not self.errors and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.stopping.set()
        self.thread.join(10)


def registration(
    broker_id: int, cluster_id: str, incarnation: uuid.UUID, port: int, log_dirs: Iterable[uuid.UUID]
) -> Any:
    """BrokerRegistration v4 as a Kafka 3.9 broker sends it (a kio entity)."""
    mod = m.module(62, 4)
    return m.build(
        m.request_class(62, 4),
        broker_id=broker_id,
        cluster_id=cluster_id,
        incarnation_id=incarnation,
        listeners=(m.build(mod.Listener, name=LISTENER_NAME, host="127.0.0.1", port=port, security_protocol=0),),
        features=tuple(
            m.build(mod.Feature, name=name, min_supported_version=low, max_supported_version=high)
            for name, low, high in BROKER_FEATURES
        ),
        rack=None,
        is_migrating_zk_broker=False,
        log_dirs=tuple(log_dirs),
        previous_broker_epoch=-1,
    )


def alter_partition(
    broker_id: int, epochs: dict[int, int], topic_id: str, index: int, part: dict[str, Any], isr: tuple[int, ...]
) -> Any:
    """AlterPartition v3 from the leader: the current leader and partition epochs, each member with its broker epoch."""
    mod = m.module(56, 3)
    data = m.build(
        mod.PartitionData,
        partition_index=index,
        leader_epoch=part["leader_epoch"],
        new_isr_with_epochs=tuple(m.build(mod.BrokerState, broker_id=b, broker_epoch=epochs[b]) for b in isr),
        leader_recovery_state=part["leader_recovery_state"],
        partition_epoch=part["partition_epoch"],
    )
    topic = m.build(mod.TopicData, topic_id=uuid.UUID(topic_id), partitions=(data,))
    return m.build(m.request_class(56, 3), broker_id=broker_id, broker_epoch=epochs[broker_id], topics=(topic,))


@dataclass
class Brokers:
    """The brokers of the log, back as new incarnations."""

    epochs: dict[int, int] = field(default_factory=dict)
    listeners: dict[int, ListenerThread] = field(default_factory=dict)


def bring_brokers_back(
    report: Report,
    daemon: DaemonProcess,
    metrics_port: int,
    cluster_id: str,
    expectation: Expectation,
    session_s: float,
) -> None:
    if not expectation.brokers:
        report.skip("register", "the log registers no broker")
        return
    brokers = Brokers()
    heartbeater = Heartbeater(daemon.port, interval=session_s / 4)
    try:
        with KioClient(daemon.port, timeout=30) as client:
            if not register_and_unfence(report, client, heartbeater, brokers, cluster_id, expectation, session_s):
                return
            leader_and_isr(report, brokers, metrics_port)
            alter_partition_check(report, client, brokers, metrics_port)
            controlled_shutdown_check(report, client, heartbeater, brokers, metrics_port)
    finally:
        heartbeater.stop()
        for listener in brokers.listeners.values():
            listener.stop()
        report.check(
            "heartbeats",
            not heartbeater.errors and heartbeater.sent > 0,
            f"{heartbeater.sent} heartbeat(s) every {heartbeater.interval:.1f} s, "
            + ("all answered NONE" if not heartbeater.errors else "; ".join(heartbeater.errors[:5])),
        )


def register_and_unfence(
    report: Report,
    client: KioClient,
    heartbeater: Heartbeater,
    brokers: Brokers,
    cluster_id: str,
    expectation: Expectation,
    session_s: float,
) -> bool:
    """Register every broker of the log as a new incarnation (retrying DUPLICATE_BROKER_REGISTRATION
    while the log's unfenced incarnation holds its session), then heartbeat it until unfenced."""
    pending = sorted(expectation.brokers)
    duplicates: dict[int, int] = {}
    started = time.monotonic()
    deadline = started + 2 * session_s + 10
    ok = True
    while pending:
        for broker_id in list(pending):
            old = expectation.brokers[broker_id]
            listener = brokers.listeners.get(broker_id) or ListenerThread(broker_id)
            brokers.listeners[broker_id] = listener
            incarnation = uuid.uuid4()
            request = registration(
                broker_id, cluster_id, incarnation, listener.port, expectation.log_dirs.get(broker_id, ())
            )
            response = client.request(request)
            duplicate = response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
            if duplicate and not old.fenced and time.monotonic() < deadline:
                duplicates[broker_id] = duplicates.get(broker_id, 0) + 1
                continue
            pending.remove(broker_id)
            epoch = int(response.broker_epoch)
            waited = (
                f" (DUPLICATE_BROKER_REGISTRATION {duplicates[broker_id]} time(s) over "
                f"{time.monotonic() - started:.1f} s: the log left it unfenced, its session ran out first)"
                if broker_id in duplicates
                else ""
            )
            good = response.error_code == ErrorCode.NONE and epoch > old.epoch
            ok &= report.check(
                f"register {broker_id}",
                good,
                f"{error_name(response.error_code)}, broker epoch {old.epoch} -> {epoch}, incarnation {incarnation}"
                + waited,
            )
            if not good:
                continue
            brokers.epochs[broker_id] = epoch
            listener.epoch = epoch
            ok &= unfence(report, client, broker_id, epoch)
            heartbeater.add(broker_id, epoch)
        if pending:
            time.sleep(0.2)
    return ok


def unfence(report: Report, client: KioClient, broker_id: int, epoch: int) -> bool:
    deadline = time.monotonic() + UNFENCE_TIMEOUT_S
    beats = 0
    while True:
        response = client.request(m.broker_heartbeat(1, broker_id, epoch, offset=epoch))
        beats += 1
        if response.error_code != ErrorCode.NONE or not response.is_fenced or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    good = response.error_code == ErrorCode.NONE and not response.is_fenced
    return report.check(
        f"unfence {broker_id}",
        good,
        f"{beats} heartbeat(s): {error_name(response.error_code)}, is_fenced {response.is_fenced}, "
        f"is_caught_up {response.is_caught_up}",
    )


def leader_and_isr(report: Report, brokers: Brokers, metrics_port: int) -> None:
    """Each broker's listener ends up with the state /state shows for every partition it hosts."""
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while True:
        document = fetch_state(metrics_port)
        missing = []
        hosted = 0
        for (topic, index), part in sorted(state_partitions(document).items()):
            for broker_id in part.replicas:
                if broker_id not in brokers.listeners:
                    continue
                hosted += 1
                view = brokers.listeners[broker_id].listener.partitions.get((topic, index))
                seen = (
                    None
                    if view is None or view.deleted
                    else (view.leader, view.leader_epoch, tuple(view.isr), view.partition_epoch, tuple(view.replicas))
                )
                wanted = (part.leader, part.leader_epoch, part.isr, part.partition_epoch, part.replicas)
                if seen != wanted:
                    missing.append(f"broker {broker_id} {topic}-{index}: holds {seen}, /state {wanted}")
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if hosted == 0:
        report.skip("leader-and-isr", "no broker hosts a partition")
        return
    report.check(
        "leader-and-isr",
        not missing,
        f"{hosted} hosted replica(s) as /state shows them"
        if not missing
        else f"{len(missing)} of {hosted} differ after {DELIVERY_TIMEOUT_S:.0f} s: " + "; ".join(missing[:3]),
    )


def _active(document: dict[str, Any]) -> set[int]:
    return {b["id"] for b in document["brokers"] if not b["fenced"] and not b["in_controlled_shutdown"]}


def without_last_follower(isr: tuple[int, ...], leader: int) -> tuple[int, ...]:
    """The ISR less its last member other than the leader (the same ISR if the leader is alone)."""
    followers = [b for b in isr if b != leader]
    return tuple(b for b in isr if not followers or b != followers[-1])


def alter_partition_check(report: Report, client: KioClient, brokers: Brokers, metrics_port: int) -> None:
    document = fetch_state(metrics_port)
    active = _active(document)
    candidates = [
        (len(part["isr"]) > 1, topic["name"], topic["topic_id"], part)
        for topic in document["topics"]
        for part in topic["partitions"]
        if part["leader"] in brokers.epochs and part["leader"] in active
    ]
    if not candidates:
        report.skip("alter-partition", "no partition is led by a broker that came back")
        return
    candidates.sort(key=lambda c: (not c[0], c[1], c[3]["partition"]))
    _, name, topic_id, part = candidates[0]
    leader, old_isr = part["leader"], tuple(part["isr"])
    shrink = len(old_isr) > 1
    new_isr = without_last_follower(old_isr, leader)
    request = alter_partition(leader, brokers.epochs, topic_id, part["partition"], part, new_isr)
    response = client.request(request)
    answered = response.topics[0].partitions[0] if response.topics and response.topics[0].partitions else None
    wanted = (0, leader, part["leader_epoch"], new_isr, part["partition_epoch"] + (1 if shrink else 0))
    got = (
        None
        if answered is None
        else (
            int(answered.error_code),
            int(answered.leader_id),
            int(answered.leader_epoch),
            tuple(int(b) for b in answered.isr),
            int(answered.partition_epoch),
        )
    )
    after = state_partitions(fetch_state(metrics_port)).get((name, part["partition"]))
    shown = None if after is None else (after.leader, after.leader_epoch, after.isr, after.partition_epoch)
    good = response.error_code == ErrorCode.NONE and got == wanted and shown == wanted[1:]
    what = "shrinks the ISR" if shrink else "sends the same one-member ISR"
    report.check(
        "alter-partition",
        good,
        f"leader {leader} of {name}-{part['partition']} {what} {list(old_isr)} -> {list(new_isr)} at leader epoch "
        f"{part['leader_epoch']}, partition epoch {part['partition_epoch']}: answered "
        f"{error_name(response.error_code)}/{'no partition' if got is None else error_name(got[0])} "
        f"(error, leader, leader epoch, ISR, partition epoch) {got}, expected {wanted}; /state then {shown}",
    )


def controlled_shutdown_check(
    report: Report, client: KioClient, heartbeater: Heartbeater, brokers: Brokers, metrics_port: int
) -> None:
    document = fetch_state(metrics_port)
    active = _active(document)
    led: dict[int, list[tuple[str, dict[str, Any]]]] = {b: [] for b in sorted(brokers.epochs)}
    for topic in document["topics"]:
        for part in topic["partitions"]:
            if part["leader"] in led:
                led[part["leader"]].append((topic["name"], part))
    broker_id = max(led, key=lambda b: (len(led[b]), -b))
    # semantics.md: a leadership with another active, online ISR member moves; one without stays (RemainingPartitions)
    remaining = sorted(
        (name, part["partition"])
        for name, part in led[broker_id]
        if len(part["replicas"]) > 1
        and not any(b != broker_id and b in active and b not in part["offline_replicas"] for b in part["isr"])
    )
    response = client.request(m.controlled_shutdown(3, broker_id, brokers.epochs[broker_id]))
    answered = sorted((str(p.topic_name), int(p.partition_index)) for p in response.remaining_partitions)
    heartbeater.add(broker_id, brokers.epochs[broker_id], want_shut_down=True)
    beat = client.request(
        m.broker_heartbeat(
            1, broker_id, brokers.epochs[broker_id], offset=brokers.epochs[broker_id], want_shut_down=True
        )
    )
    after = fetch_state(metrics_port)
    flags = {b["id"]: (b["fenced"], b["in_controlled_shutdown"]) for b in after["brokers"]}[broker_id]
    still_leads = sorted(
        (t["name"], p["partition"])
        for t in after["topics"]
        for p in t["partitions"]
        if p["leader"] == broker_id and len(p["replicas"]) > 1
    )
    good = (
        response.error_code == ErrorCode.NONE
        and answered == remaining
        and beat.error_code == ErrorCode.NONE
        and bool(beat.should_shut_down) == (not remaining)
        and flags[1]
        and flags[0] == (not remaining)
        and still_leads == remaining
    )
    report.check(
        "controlled-shutdown",
        good,
        f"broker {broker_id} (leading {len(led[broker_id])} partition(s)): {error_name(response.error_code)}, "
        f"RemainingPartitions {answered} (expected {remaining}); heartbeat {error_name(beat.error_code)}, "
        f"ShouldShutDown {beat.should_shut_down}; /state: fenced {flags[0]}, in controlled shutdown {flags[1]}, "
        f"leads {still_leads} of more than one replica",
    )


# ---------------------------------------------------------------------------- one data dir
def adopt(source: Path, session_ms: int, keep: bool) -> Report:
    report = Report(label=str(source))
    print(f"== {source}", flush=True)
    if not (source / "meta.properties").is_file():
        report.check("data-dir", False, f"{source} has no meta.properties: not a KRaft data dir")
        return report
    before = digest(source)
    scratch = Path(tempfile.mkdtemp(prefix="fencer-adopt-"))
    copy = scratch / "data"
    shutil.copytree(source, copy, symlinks=True)
    print(f"copy: {copy}", flush=True)
    try:
        _adopt_copy(report, source, copy, scratch, session_ms)
    except Exception as exc:  # a check that crashed is a failure of this dir; the next dirs still run
        traceback.print_exc()
        report.check("no-crash", False, f"the checks stopped: {exc!r}")
    finally:
        after = digest(source)
        report.check(
            "source-unchanged",
            after == before,
            f"{len(before)} file(s) of {source} as before"
            if after == before
            else f"changed: {sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))}",
        )
        if keep:
            print(f"kept: {scratch}", flush=True)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return report


def _adopt_copy(report: Report, source: Path, copy: Path, scratch: Path, session_ms: int) -> None:
    properties = read_properties(copy / "meta.properties")
    cluster_id, node_id = (
        properties.get("cluster.id", ""),
        int(properties.get("node.id", properties.get("broker.id", "1"))),
    )
    meta_bytes = (copy / "meta.properties").read_bytes()
    dump_log(report, copy)
    broker_sim_check(report, "check", copy, scratch)
    try:
        expectation = expect(copy)
    except CheckError as exc:
        report.check("expectation", False, str(exc))
        return
    notes = "".join(f"; note: {note}" for note in expectation.notes)
    if not report.check(
        "expectation",
        not expectation.problems,
        expectation.summary() + notes + "".join(f"; problem: {problem}" for problem in expectation.problems),
    ):
        print("(the comparisons below use what could be read)", flush=True)
    known_epoch = quorum_epoch(copy)
    metrics_port = free_port()
    daemon = DaemonProcess(
        copy,
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
        "--session-timeout-ms",
        str(session_ms),
        "--node-id",
        str(node_id),
        log_file=scratch / "daemon.stderr",
    )
    try:
        daemon.start()
    except RuntimeError as exc:
        report.check("daemon", False, "did not start: " + " | ".join(str(exc).strip().splitlines()[-3:])[:1000])
        broker_sim_check(report, "check-after", copy, scratch)
        return
    stopped = False
    try:
        document = fetch_state(metrics_port)
        report.check(
            "daemon",
            True,
            f"listening on 127.0.0.1:{daemon.port}, /state on 127.0.0.1:{metrics_port}; {start_line(daemon)}",
        )
        identity = (document["cluster_id"], document["controller_id"])
        report.check(
            "state-identity",
            identity == (cluster_id, node_id),
            f"cluster id {identity[0]}, controller id {identity[1]} (meta.properties: {cluster_id}, node {node_id})",
        )
        epoch = document["controller_epoch"]
        report.check(
            "state-epoch",
            epoch > max(expectation.controller_epoch, known_epoch),
            f"controller epoch {epoch}, above the log's {expectation.controller_epoch} and quorum-state's "
            f"leaderEpoch {known_epoch}",
        )
        report.check(
            "state-offset",
            document["last_applied_offset"] == expectation.end_offset,
            f"last applied offset {document['last_applied_offset']} (the start's LeaderChange; the log ended at "
            f"offset {expectation.end_offset})",
        )
        for name, found in compare_state(expectation, document).items():
            report.check(name, not found, "; ".join(found) if found else _same(name, expectation))
        bring_brokers_back(report, daemon, metrics_port, cluster_id, expectation, session_ms / 1000)
        code = daemon.stop()
        stopped = True
        report.check("sigterm", code == 0, f"exit {code}" + ("" if code == 0 else ": " + daemon.stderr()[-500:]))
    finally:
        if not stopped:
            daemon.stop()
    report.check(
        "meta-properties",
        (copy / "meta.properties").read_bytes() == meta_bytes,
        "kept byte for byte (fencer never rewrites an existing one)",
    )
    written = quorum_epoch(copy)
    report.check("quorum-state", written == epoch, f"leaderEpoch {written} (the daemon's epoch {epoch})")
    broker_sim_check(report, "check-after", copy, scratch)


def start_line(daemon: DaemonProcess) -> str:
    """The daemon's start-up log line from `started:` on (what it replayed: from a snapshot or the whole log)."""
    for line in daemon.stderr().splitlines():
        if "started: " in line:
            return line[line.index("started: ") :]
    return "no start-up line logged"


def _same(name: str, expectation: Expectation) -> str:
    if name == "state-brokers":
        return "as the log: " + ", ".join(
            f"{b} (epoch {f.epoch}, {'fenced' if f.fenced else 'unfenced'}"
            f"{', in controlled shutdown' if f.in_controlled_shutdown else ''})"
            for b, f in sorted(expectation.brokers.items())
        )
    if name == "state-topics":
        return f"as the log: {len(expectation.topics)} topic(s), names and ids"
    return f"as the log: {len(expectation.partitions)} partition(s), every field"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tests/kafka_dirs/adopt.py", description="Check that fencer adopts KRaft data dirs Apache Kafka wrote."
    )
    parser.add_argument(
        "dirs", nargs="+", type=Path, metavar="DIR", help="a KRaft data dir (only read: a copy is used)"
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=DEFAULT_SESSION_TIMEOUT_MS,
        metavar="MS",
        help=f"the daemon's session timeout (default {DEFAULT_SESSION_TIMEOUT_MS})",
    )
    parser.add_argument("--keep", action="store_true", help="keep each copy (and the daemon's stderr); print where")
    args = parser.parse_args(argv)
    reports = [adopt(source.resolve(), args.session_timeout_ms, args.keep) for source in args.dirs]
    print()
    for report in reports:
        failed = len(report.failures)
        print(f"{report.label}: {report.checks - failed} of {report.checks} checks passed")
    failures = [failure for report in reports for failure in report.failures]
    if failures:
        print("FAILED:\n" + "\n".join(f"  {failure}" for failure in failures))
        return 1
    print("OK: every data dir adopted")
    return 0


if __name__ == "__main__":
    sys.exit(main())

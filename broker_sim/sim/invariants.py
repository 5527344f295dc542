"""What only a simulation may hold a controller quorum to, checked on a seed's journal.

Rules:
- `sim-election-without-fault`: a quorum whose leader is healthy keeps it. On a wall clock a
  starved machine may delay a leader's fetch answers past the timeout and so depose it; in the
  simulation no task is ever late, the network delays by milliseconds and nothing is lost but
  by a fault, so every epoch after the first leader's follows a controller fault: the fleet saw
  (`QuorumLeaderSeen`) a leader of a newer epoch no earlier than the first fault's start and
  no later than `DEPOSED_SLACK` deposition times (`QuorumTiming.deposed_s`: 1.5 fetch timeouts
  and 2 election timeouts) after the end of the last fault that began before it. A follower whose
  fetch timer is never reset, or a leader that stops answering fetches, breaks it.
- `sim-live-broker-fenced`: a broker that heartbeats on time is never fenced in the log, whatever
  it was answered (a fence that the next heartbeat undoes is still a fence: every replica it led
  lost its leadership). Every fence in the committed log (the longest node log's
  BrokerRegistrationChangeRecord fenced=1 and FenceBrokerRecord) of an incarnation the broker was
  answered the registration of and that had not crashed (a quorum's failovers restart every
  session, KAFKA-14392, so a dead or an unacknowledged incarnation's fence may come late), at its
  batch's timestamp T, needs a cause in the journal: the broker crashed or was paused from T less
  a session timeout and `FENCE_SLACK_MS` on, or its controlled shutdown began before T (a broker
  that shut down stops heartbeating). An activation that starts the brokers' sessions on a wrong
  clock (KAFKA-14392) breaks it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from broker_sim.check.liveness import crashed_incarnations
from broker_sim.check.log import CheckError, LogReader
from broker_sim.journal import (
    ControllerFaulted,
    Entry,
    FaultInjected,
    QuorumLeaderSeen,
    QuorumStarted,
    Registered,
    RunStarted,
    ShutdownTracked,
)
from broker_sim.model.quorum import QuorumTiming
from protocol.records.metadata import BrokerRegistrationChangeRecord, FenceBrokerRecord

from .cluster import EPOCH_NS

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
#: a fence may come this long after the session timeout of a broker's last sign of life (the
#: controller's session timer runs every 250 ms at most, and a crash stops heartbeats one interval early)
FENCE_SLACK_MS = 3_000
#: how many deposition times after a fault's end a new epoch may still come from it
DEPOSED_SLACK = 2.0


def elections_without_fault(entries: Iterable[Entry]) -> list[str]:
    """The violations of `sim-election-without-fault` in a seed's journal (see the rules)."""
    timing: QuorumTiming | None = None
    window_end_ns: int | None = None  # the newest fault's reach (None: no fault yet)
    epoch: int | None = None  # the newest epoch seen
    found: list[str] = []
    for entry in entries:
        if isinstance(entry, QuorumStarted):
            timing = QuorumTiming(entry.election_timeout_ms / 1000, entry.fetch_timeout_ms / 1000)
        elif isinstance(entry, ControllerFaulted) and timing is not None:
            reach_s = entry.duration_ms / 1000 + DEPOSED_SLACK * timing.deposed_s
            window_end_ns = max(window_end_ns or 0, entry.wall_ns + int(reach_s * NS_PER_S))
        elif isinstance(entry, QuorumLeaderSeen):
            newer = epoch is not None and entry.leader_epoch > epoch
            if newer and (window_end_ns is None or entry.wall_ns > window_end_ns):
                found.append(
                    f"[sim-election-without-fault] node {entry.node} led epoch {entry.leader_epoch} "
                    f"(after {epoch}) with no controller fault in reach"
                    + ("" if window_end_ns is None else f" (the last reached {_at(window_end_ns)})")
                    + f", seen at {_at(entry.wall_ns)}"
                )
            epoch = entry.leader_epoch if epoch is None else max(epoch, entry.leader_epoch)
    return found


def fences_of_live_brokers(node_dirs: Iterable[Path], entries: Iterable[Entry]) -> list[str]:
    """The violations of `sim-live-broker-fenced` (see the rules): the fences of the longest log
    among `node_dirs` (the committed one holds no more), each with the journal's causes."""
    entries = list(entries)
    session_ms: int | None = None
    down: dict[int, list[tuple[int, int]]] = {}  # broker -> (from, to) ms of its crashes and pauses
    shutting: dict[int, list[int]] = {}  # broker -> when each of its controlled shutdowns began (ms)
    known: set[tuple[int, int]] = set()  # (broker, epoch) of every registration the broker was answered
    for entry in entries:
        if isinstance(entry, RunStarted):
            session_ms = entry.session_timeout_ms
        elif isinstance(entry, FaultInjected) and entry.fault in ("crash", "pause"):
            start = entry.wall_ns // NS_PER_MS
            down.setdefault(entry.broker, []).append((start, start + int(entry.duration_ms)))
        elif isinstance(entry, ShutdownTracked):
            shutting.setdefault(entry.broker, []).append(entry.started_wall_ns // NS_PER_MS)
        elif isinstance(entry, Registered):
            known.add((entry.broker, entry.broker_epoch))
    if session_ms is None:
        return []
    crashed = crashed_incarnations(entries)
    found = []
    for broker, epoch, at_ms in _fences(node_dirs):
        if (broker, epoch) not in known or crashed.get((broker, epoch), at_ms + 1) <= at_ms:
            continue  # an incarnation the broker never learnt of, or one that had crashed
        since = at_ms - session_ms - FENCE_SLACK_MS
        if any(start <= at_ms and end >= since for start, end in down.get(broker, ())):
            continue
        if any(began <= at_ms for began in shutting.get(broker, ())):
            continue
        found.append(
            f"[sim-live-broker-fenced] broker {broker} (epoch {epoch}) was fenced at {_at(at_ms * NS_PER_MS)} with "
            f"no crash, pause or controlled shutdown of it since {_at(since * NS_PER_MS)} (a session timeout before)"
        )
    return found


def _fences(node_dirs: Iterable[Path]) -> list[tuple[int, int, int]]:
    """(broker, broker epoch, batch timestamp ms) of every fence in the longest of the nodes' logs."""
    longest: list[tuple[int, int, int]] = []
    longest_end = -1
    for node_dir in node_dirs:
        fences, end = [], -1
        try:
            with LogReader(node_dir) as reader:
                for batch in reader.batches(0):
                    for offset, record, _version in batch.records:
                        end = offset
                        if isinstance(record, BrokerRegistrationChangeRecord) and record.fenced == 1:
                            fences.append((record.broker_id, record.broker_epoch, batch.timestamp_ms))
                        elif isinstance(record, FenceBrokerRecord):
                            fences.append((record.id, record.epoch, batch.timestamp_ms))
        except CheckError:
            continue  # an unreadable log is the final check's to report
        if end > longest_end:
            longest, longest_end = fences, end
    return longest


def _at(wall_ns: int) -> str:
    """A journal time as the simulation's seconds (its wall clock starts at `cluster.EPOCH_NS`)."""
    return f"{(wall_ns - EPOCH_NS) / NS_PER_S:.3f} s"

"""`--processes K`: one fleet spread over K OS processes, their results merged into one run.

Rules:
- Process k runs a contiguous slice of the broker ids (`broker_slices`: sizes differ by at most
  one) with the run's seed and scenario; only process 0 creates the topics. Each writes its own
  journal, `<journal>.process-<k>`, merged into the run's journal at the end (`merge_journals`:
  by time, each process's own order kept) and then removed, and its own capture directory,
  `<capture-dir>/process=<k>` (a capture writer owns its directory; the hive-style name lets
  Spark and pyarrow read the whole capture dir at once, with a `process` column).
- Workers start with multiprocessing's "spawn" (nothing inherited from the parent's event loop)
  and report over a one-way pipe: `("stats", snapshot)` about once a second, without the latency
  reservoirs (the live display does not use them), and `("done", snapshot, outcome)` at the end,
  whole. The parent's figures are the merge of each worker's latest snapshot.
- The parent never waits on a worker for ever: a worker that exits without "done" is reported
  dead, with the brokers it ran and its exit status (its figures are those of its last
  snapshot); one still running `GRACE_S` after the duration is sent SIGTERM, and SIGKILL after
  `STOP_S` more. SIGINT and SIGTERM to the parent are passed on as SIGTERM (workers ignore
  SIGINT: a Ctrl-C reaches the whole process group, and the parent decides); a second one kills.
- A worker whose parent is gone (its pipe broken) stops its fleet.
"""

from __future__ import annotations

import heapq
import multiprocessing
import signal
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import trio
from rich.console import Console

from broker_sim.journal import Entry, JournalError, JournalWriter, ShutdownTracked, read_journal
from broker_sim.report import RunResult
from broker_sim.shell.display import announce, show_progress
from broker_sim.shell.fleet import FleetConfig, FleetOutcome, run_fleet
from broker_sim.stats import FleetStats

SNAPSHOT_INTERVAL_S = 1.0
POLL_S = 0.1
GRACE_S = 60.0  # after the duration: a fleet's own shutdown (bounces, drains) takes some seconds
STOP_S = 10.0  # from SIGTERM to SIGKILL
_RESERVOIRS = ("latencies_ms", "heartbeat_lateness_ms")


def broker_slices(brokers: int, processes: int) -> list[tuple[int, int]]:
    """(offset of the first broker, number of brokers) for each process."""
    size, extra = divmod(brokers, processes)
    slices, offset = [], 0
    for index in range(processes):
        count = size + (1 if index < extra else 0)
        slices.append((offset, count))
        offset += count
    return slices


def journal_part(journal: Path, index: int) -> Path:
    return journal.with_name(f"{journal.name}.process-{index}")


def worker_configs(config: FleetConfig, processes: int) -> list[FleetConfig]:
    """The configuration of each fleet process of a run of `config`."""
    return [
        replace(
            config,
            first_broker_id=config.first_broker_id + offset,
            brokers=count,
            create_topics=config.create_topics and index == 0,
            journal_path=None if config.journal_path is None else journal_part(config.journal_path, index),
            capture_dir=None if config.capture_dir is None else config.capture_dir / f"process={index}",
        )
        for index, (offset, count) in enumerate(broker_slices(config.brokers, processes))
    ]


def merge_snapshots(snapshots: list[dict[str, Any]]) -> FleetStats:
    merged = FleetStats()
    for snapshot in snapshots:
        merged.merge(snapshot)
    return merged


def merge_journals(parts: list[Path], into: Path) -> int:
    """Write the entries of the processes' journals into one, by time; return how many."""
    writer = JournalWriter(into)
    try:
        streams = [read_journal(part) for part in parts if part.exists()]
        writer.write_all(heapq.merge(*streams, key=_entry_time))
        return writer.entries
    finally:
        writer.close()


def _entry_time(entry: Entry) -> int:
    if isinstance(entry, ShutdownTracked):  # written when it ends
        return entry.finished_wall_ns or entry.started_wall_ns
    return entry.wall_ns


# ---- the worker side --------------------------------------------------------------------------


def worker_main(config: FleetConfig, connection: Connection) -> None:
    """A fleet process: run `config`'s brokers and report over `connection`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        trio.run(_work, config, connection)
    except (BrokenPipeError, EOFError):
        pass  # the parent is gone: nobody to tell
    finally:
        connection.close()


async def _work(config: FleetConfig, connection: Connection) -> None:
    stats = FleetStats()
    outcome = FleetOutcome(finished=False, unreachable=None)
    async with trio.open_nursery() as nursery:
        await nursery.start(_stop_on_sigterm, nursery.cancel_scope)
        nursery.start_soon(_send_snapshots, stats, connection, nursery.cancel_scope)
        outcome = await run_fleet(config, stats)
        nursery.cancel_scope.cancel()
    message = ("done", stats.snapshot(), {"finished": outcome.finished, "unreachable": outcome.unreachable})
    await trio.to_thread.run_sync(connection.send, message)


async def _stop_on_sigterm(
    scope: trio.CancelScope, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        task_status.started()
        async for _signal in signals:
            scope.cancel()
            return


async def _send_snapshots(stats: FleetStats, connection: Connection, scope: trio.CancelScope) -> None:
    while True:
        await trio.sleep(SNAPSHOT_INTERVAL_S)
        live = {name: value for name, value in stats.snapshot().items() if name not in _RESERVOIRS}
        try:
            # in a thread: a parent slow to read must not hold up the brokers' event loop
            await trio.to_thread.run_sync(connection.send, ("stats", live))
        except OSError:  # BrokenPipeError: the parent is gone
            scope.cancel()
            return


# ---- the parent side --------------------------------------------------------------------------


@dataclass
class Worker:
    index: int
    config: FleetConfig
    process: BaseProcess
    connection: Connection
    snapshot: dict[str, Any] = field(default_factory=dict)
    outcome: dict[str, Any] | None = None  # the "done" message's
    exit_code: int | None = None
    stopped_by_parent: str | None = None  # why the parent had to stop it
    asked_to_stop: bool = False  # the run was interrupted: SIGTERM passed on

    @property
    def brokers(self) -> str:
        first = self.config.first_broker_id
        return f"broker {first}" if self.config.brokers == 1 else f"brokers {first}-{first + self.config.brokers - 1}"

    @property
    def running(self) -> bool:
        return self.exit_code is None

    def receive(self) -> None:
        """Take every message waiting on the pipe (never blocks on an empty one)."""
        try:
            while self.connection.poll():
                message = self.connection.recv()
                if message[0] == "stats":
                    self.snapshot = message[1]
                elif message[0] == "done":
                    self.snapshot, self.outcome = message[1], message[2]
        except (EOFError, OSError):
            pass  # the worker is gone; its exit status tells how

    def failure(self) -> str | None:
        if self.outcome is not None and self.stopped_by_parent is None:
            return None
        if self.asked_to_stop and self.exit_code == -signal.SIGTERM:
            return None  # stopped by the passed-on signal before its fleet started: as asked
        how = self.stopped_by_parent or f"died with exit status {self.exit_code}"
        return f"fleet process {self.index} ({self.brokers}) {how}; its figures end at its last snapshot"

    def describe(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "first_broker_id": self.config.first_broker_id,
            "brokers": self.config.brokers,
            "exit_code": self.exit_code,
            "outcome": self.outcome,
            "failure": self.failure(),
        }


def start_workers(configs: list[FleetConfig]) -> list[Worker]:
    context = multiprocessing.get_context("spawn")
    workers = []
    for index, config in enumerate(configs):
        receiving, sending = context.Pipe(duplex=False)
        process = context.Process(target=worker_main, args=(config, sending), name=f"fencer-fleet-{index}")
        process.daemon = True  # a parent that dies abruptly takes its workers along
        process.start()
        sending.close()  # the parent's copy: the pipe then ends when the worker does
        workers.append(Worker(index, config, process, receiving))
    return workers


async def run_in_processes(config: FleetConfig, processes: int, console: Console) -> RunResult:
    """Run `config` over `processes` fleet processes, with the display, and merge what they report."""
    workers: list[Worker] = []
    result = RunResult(stats=FleetStats())

    def current() -> FleetStats:
        return merge_snapshots([worker.snapshot for worker in workers])

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(_forward_signals, workers, result)
            configs = worker_configs(config, processes)
            for part in (worker.journal_path for worker in configs if worker.journal_path is not None):
                part.unlink(missing_ok=True)  # a crashed run's: the journal writer appends
            workers.extend(start_workers(configs))
            announce(console, config, processes)
            nursery.start_soon(show_progress, console, current, config.duration_s)
            await _supervise(workers, config.duration_s)
            nursery.cancel_scope.cancel()
    finally:
        for worker in workers:
            _reap(worker)
    _merged_result(workers, result)
    if config.journal_path is not None:
        _merge_worker_journals(workers, config.journal_path, result)
    return result


def _merge_worker_journals(workers: list[Worker], journal: Path, result: RunResult) -> None:
    parts = [worker.config.journal_path for worker in workers if worker.config.journal_path is not None]
    try:
        merge_journals(parts, journal)
    except (OSError, JournalError) as error:  # the parts stay, for a look
        result.failures.append(f"the fleet processes' journals could not be merged into {journal}: {error}")
        return
    for part in parts:
        part.unlink(missing_ok=True)


async def _supervise(workers: list[Worker], duration_s: float) -> None:
    terminate_at = trio.current_time() + duration_s + GRACE_S
    kill_at: float | None = None
    while any(worker.running for worker in workers):
        for worker in workers:
            worker.receive()
            if worker.running and not worker.process.is_alive():
                worker.receive()  # what it sent before it exited
                worker.exit_code = worker.process.exitcode
        now = trio.current_time()
        if kill_at is None and now >= terminate_at:
            _signal_running(workers, signal.SIGTERM, f"was still running {GRACE_S:g}s after the run's duration")
            kill_at = now + STOP_S
        elif kill_at is not None and now >= kill_at:
            _signal_running(workers, signal.SIGKILL, f"did not stop within {STOP_S:g}s of SIGTERM")
        await trio.sleep(POLL_S)


async def _forward_signals(
    workers: list[Worker], result: RunResult, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for _signal in signals:
            second = result.interrupted
            result.interrupted = True
            _signal_running(workers, signal.SIGKILL if second else signal.SIGTERM, None)


def _signal_running(workers: list[Worker], signum: int, why: str | None) -> None:
    for worker in workers:
        if worker.running and worker.process.pid is not None:
            if why is None:
                worker.asked_to_stop = True
            elif worker.stopped_by_parent is None:
                worker.stopped_by_parent = why
            # (multiprocessing ignores a process that exited meanwhile)
            (worker.process.kill if signum == signal.SIGKILL else worker.process.terminate)()


def _reap(worker: Worker) -> None:
    """Make sure the worker process is gone and its pipe closed (also when the parent fails)."""
    if worker.process.is_alive():
        worker.process.kill()
    worker.process.join(STOP_S)
    if worker.exit_code is None:
        worker.exit_code = worker.process.exitcode
    worker.connection.close()


def _merged_result(workers: list[Worker], result: RunResult) -> None:
    result.stats = merge_snapshots([worker.snapshot for worker in workers])
    outcomes = [worker.outcome for worker in workers]
    unreachable = [outcome["unreachable"] for outcome in outcomes if outcome and outcome["unreachable"]]
    result.unreachable = unreachable[0] if unreachable else None
    result.finished = all(outcome is not None and outcome["finished"] for outcome in outcomes)
    result.failures = [failure for worker in workers if (failure := worker.failure()) is not None]
    result.processes = [worker.describe() for worker in workers]

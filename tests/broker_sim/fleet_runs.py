"""Running the fleet against the real daemon in tests: one short run per scenario, kept for the module.

`run_against_daemon` starts a fresh daemon (session timeout 3 s), runs `run_fleet` with a small
fleet (5 brokers, 3 topics of 4 partitions, RF 3, heartbeats every second) and returns the stats,
the journal entries and the outcome. `scenario_run` runs every scenario side by side on its first
call (each against its own daemon: the runs wait on timers far more than they compute) and caches
them for the test module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from broker_sim.journal import Entry, read_journal
from broker_sim.shell.fleet import SCENARIOS, FleetConfig, FleetOutcome, run_fleet
from broker_sim.stats import FleetStats
from tests.e2e.daemon_process import DaemonProcess

SESSION_TIMEOUT_MS = 3000


@dataclass
class FleetRun:
    outcome: FleetOutcome
    stats: FleetStats
    entries: list[Entry]
    directory: Path
    daemon_stderr: str

    def kinds(self, kind: str) -> list[Any]:
        return [entry for entry in self.entries if entry.kind == kind]


def small_config(port: int, directory: Path, scenario: str, seed: int, duration_s: float) -> FleetConfig:
    return FleetConfig(
        controller_port=port,
        brokers=5,
        topics=3,
        partitions=4,
        replication_factor=3,
        duration_s=duration_s,
        seed=seed,
        scenario=scenario,
        heartbeat_ms=1000,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        capture_dir=directory / "capture",
        journal_path=directory / "journal.jsonl",
    )


async def run_against_daemon(directory: Path, scenario: str, seed: int, duration_s: float) -> FleetRun:
    directory.mkdir(parents=True, exist_ok=True)
    daemon = await trio.to_thread.run_sync(
        lambda: DaemonProcess(directory / "data", "--session-timeout-ms", str(SESSION_TIMEOUT_MS)).start()
    )
    try:
        stats = FleetStats()
        outcome = await run_fleet(small_config(daemon.port, directory, scenario, seed, duration_s), stats)
    finally:
        code = await trio.to_thread.run_sync(daemon.stop)
    assert code == 0, daemon.stderr()
    entries = list(read_journal(directory / "journal.jsonl"))
    return FleetRun(outcome, stats, entries, directory, daemon.stderr())


_RUNS: dict[str, FleetRun] = {}


async def scenario_run(root: Path, scenario: str, seed: int = 7, duration_s: float = 18.0) -> FleetRun:
    if not _RUNS:

        async def run(name: str) -> None:
            _RUNS[name] = await run_against_daemon(root / name, name, seed, duration_s)

        async with trio.open_nursery() as nursery:
            for name in SCENARIOS:
                nursery.start_soon(run, name)
    return _RUNS[scenario]

"""The fleet given several controllers (`--controller A,B`) finds the active one as a Kafka
broker does in its quorum: past a controller nobody listens for, and past a real peer that answers
every request NOT_CONTROLLER (`not_controller_peer`), to the real daemon, where every broker
registers and the run is clean: the NOT_CONTROLLER answers counted under their name, every move
journalled, no violation, no bad answer, and the final check of the daemon's log clean."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from broker_sim.journal import BadAnswer, ControllerSwitched, Registered, read_journal
from broker_sim.report import run_final_check
from broker_sim.shell.fleet import FleetConfig, run_fleet
from broker_sim.stats import FleetStats
from tests.e2e.daemon_process import DaemonProcess, free_port

from .fleet_command import daemon, run_fleet_command
from .not_controller_peer import not_controller_peer

__all__ = ["daemon"]  # the fixture, imported for the tests below

SESSION_TIMEOUT_MS = 3000


def lifecycles(brokers: int) -> list[tuple[int, str]]:
    return [(broker, "lifecycle") for broker in range(brokers)]


def first_moves(switches: list[ControllerSwitched]) -> dict[tuple[int, str], tuple[str, str, str]]:
    """(broker, channel) -> (from, to, reason) of each connection's first move."""
    first: dict[tuple[int, str], tuple[str, str, str]] = {}
    for s in switches:
        first.setdefault((s.broker, s.channel), (s.from_controller, s.to_controller, s.reason))
    return first


def test_a_dead_controller_first_in_the_list_is_passed_over(daemon: DaemonProcess, tmp_path: Path) -> None:
    dead, live = f"127.0.0.1:{free_port()}", f"127.0.0.1:{daemon.port}"
    report_path = tmp_path / "run.json"
    arguments = ["--controller", f"{dead},{live}", "--brokers", "3", "--duration", "4", "--seed", "3"]
    run = run_fleet_command("run", *arguments, "--data-dir", str(daemon.data_dir), "--report", str(report_path))
    assert run.returncode == 0, run.stderr + run.stdout
    assert run.stdout.startswith(f"fleet: brokers 0-2 against {dead},{live},")
    report = json.loads(report_path.read_text())
    assert report["arguments"]["controller"] == f"{dead},{live}"
    assert report["violations"] == [] and report["check"]["violations"] == []
    entries = list(read_journal(tmp_path / "run.journal.jsonl"))
    switches = [entry for entry in entries if isinstance(entry, ControllerSwitched)]
    first = first_moves(switches)
    assert {key: first[key] for key in first if key[1] != "data"} == {
        (broker, channel): (dead, live, "connect-failed") for broker, channel in [*lifecycles(3), (-1, "admin")]
    }
    # a connection that broke at the live one later (a loaded machine) goes round the ring: past dead again
    assert {(s.from_controller, s.to_controller, s.reason) for s in switches} <= {
        (dead, live, "connect-failed"),
        (live, dead, "connection-lost"),
    }
    assert {entry.broker for entry in entries if isinstance(entry, Registered)} == {0, 1, 2}
    moved = report["stats"]["controller_switches"]
    assert moved["connect-failed"] >= 3 and sum(moved.values()) == len(switches)
    assert f"controller switches: connect-failed {moved['connect-failed']}" in run.stdout


async def test_brokers_answered_not_controller_move_on_and_register_at_the_active_controller(tmp_path: Path) -> None:
    live = await trio.to_thread.run_sync(
        lambda: DaemonProcess(tmp_path / "data", "--session-timeout-ms", str(SESSION_TIMEOUT_MS)).start()
    )
    journal = tmp_path / "journal.jsonl"
    stats = FleetStats()
    try:
        async with not_controller_peer() as standby:
            config = FleetConfig(
                controller_port=standby.port,
                other_controllers=(("127.0.0.1", live.port),),
                brokers=4,
                topics=1,
                partitions=4,
                replication_factor=3,
                duration_s=5.0,
                seed=5,
                heartbeat_ms=1000,
                session_timeout_ms=SESSION_TIMEOUT_MS,
                journal_path=journal,
            )
            outcome = await run_fleet(config, stats)
    finally:
        code = await trio.to_thread.run_sync(live.stop)
    assert code == 0, live.stderr()
    assert outcome.finished and outcome.unreachable is None
    entries = list(read_journal(journal))
    assert {entry.broker for entry in entries if isinstance(entry, Registered)} == {0, 1, 2, 3}
    switches = [entry for entry in entries if isinstance(entry, ControllerSwitched)]
    standby_at, live_at = f"127.0.0.1:{standby.port}", f"127.0.0.1:{live.port}"
    first = first_moves(switches)
    assert {key: first[key] for key in first if key[1] != "data"} == {
        (broker, channel): (standby_at, live_at, "not-controller")
        for broker, channel in [*lifecycles(4), (-1, "admin")]
    }
    assert {(s.from_controller, s.to_controller, s.reason) for s in switches} <= {
        (standby_at, live_at, "not-controller"),
        (live_at, standby_at, "connection-lost"),  # a connection broken at the live one (a loaded machine)
    }
    # every NOT_CONTROLLER answer counted under its name, as any answered error, and moved its connection
    not_controller = {key: n for key, n in stats.errors_by_code.items() if key.endswith(":NOT_CONTROLLER")}
    assert not_controller["DescribeCluster:NOT_CONTROLLER"] >= 5  # four brokers' first request, the admin's
    answered = sum(standby.answered.values()) - 1  # but the start's probe, which is no request of the run
    assert sum(not_controller.values()) == stats.controller_switches["not-controller"] == answered
    assert stats.violations == [] and not [entry for entry in entries if isinstance(entry, BadAnswer)]
    assert not [key for key in stats.errors_by_code if key.endswith("BAD_ANSWER")]
    assert stats.requests_by_api["CreateTopics"] >= 1 and stats.control_requests_by_api["LeaderAndIsr"] > 0
    final = run_final_check(tmp_path / "data", journal)
    assert final.violations == [] and final.problems == []

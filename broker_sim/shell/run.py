"""A fleet run from start to verdict: the fleet (one process or several), the display, the final
check, the summary, the report and the exit status.

Rules:
- The run's journal starts empty: an existing file at its path is replaced (one journal, one run).
- SIGINT and SIGTERM stop the fleet (its brokers leave as the fleet decides) and the run goes on
  to its summary, final check and report; the exit status says it was interrupted.
- Errors that end a run before it starts (an unreachable controller) are one line on stderr,
  `<prog>: error: <why>`; the report is still written, so a script can read why.
- Output: the live display and the summary on stdout, rich on a terminal and plain text
  otherwise; the verdict's facts (violations, problems, failed processes) are listed after it.
- With its own quorum (`quorum`, `--quorum N`): the nodes are started (and a leader elected)
  before the fleet, the brokers' controllers are the nodes' addresses, the controller faults
  (`quorum_faults`) run beside the brokers, and every node is stopped once the fleet has closed,
  before the final check, which takes every node's data dir. The codecs are compiled before the
  quorum starts: its proxies share the fleet's event loop, which the compilation holds for a
  second or two (the quorum's first leader lost its epoch to it). A quorum that cannot be started
  ends the run as an unreachable controller does; a node that failed during the run (exited by
  itself, did not stop) is a failure of the run.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import trio
from rich.console import Console

from broker_sim.model.schedule import controller_fault_schedule
from broker_sim.report import (
    FinalCheck,
    RunResult,
    build_report,
    describe_lines,
    exit_status,
    run_final_check,
    run_quorum_check,
    write_report,
)
from broker_sim.shell.display import announce, show_progress, summary_figures, summary_table, summary_text
from broker_sim.shell.fleet import FleetConfig, run_fleet, timing_of
from broker_sim.shell.processes import run_in_processes
from broker_sim.shell.quorum import Quorum, open_quorum
from broker_sim.shell.quorum_faults import ControllerFaults
from broker_sim.shell.quorum_node import QuorumError
from broker_sim.shell.quorum_plan import QuorumPlan
from broker_sim.shell.runner import Alongside, warm_codecs
from broker_sim.stats import FleetStats


@dataclass(frozen=True)
class RunPlan:
    """What the command line decided: the whole fleet's configuration and what to do around it."""

    config: FleetConfig  # journal_path: the run's journal (or None)
    processes: int = 1
    report_path: Path | None = None
    data_dir: Path | None = None  # the controller's: checked at the end
    journal_is_temporary: bool = False  # made only for the final check, removed after it
    arguments: Mapping[str, Any] = field(default_factory=dict)  # as given, for the report
    quorum: QuorumPlan | None = None  # the fleet's own quorum (--quorum): its controllers


def execute(plan: RunPlan, *, prog: str, console: Console | None = None, errors: TextIO | None = None) -> int:
    """Run `plan`, show it, check it, report it; return the exit status."""
    console = console or Console()
    errors = errors or sys.stderr
    if plan.config.journal_path is not None:
        plan.config.journal_path.parent.mkdir(parents=True, exist_ok=True)
        plan.config.journal_path.write_bytes(b"")
    started = time.monotonic()
    if plan.quorum is not None:
        result = trio.run(run_with_quorum, plan.config, plan.quorum, console)
    elif plan.processes == 1:
        result = trio.run(run_in_process, plan.config, console)
    else:
        result = trio.run(run_in_processes, plan.config, plan.processes, console)
    result.elapsed_s = time.monotonic() - started
    if result.unreachable is not None:
        print(f"{prog}: error: {result.unreachable}", file=errors)
        _write_report(plan, result, None, prog, errors)
        return exit_status(result, None)
    final = _final_check(plan)
    figures = summary_figures(result.stats)
    if console.is_terminal:
        console.print(summary_table(figures))
    else:
        console.print(summary_text(figures), markup=False, highlight=False, soft_wrap=True)
    for line in describe_lines(result, final):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    status = _write_report(plan, result, final, prog, errors)
    console.print(_verdict(result, final, status), markup=False, highlight=False, soft_wrap=True)
    for name, path in _paths(plan).items():
        if path is not None and name != "data_dir":
            console.print(f"{name}: {path}", markup=False, highlight=False, soft_wrap=True)
    return status


async def run_in_process(
    config: FleetConfig, console: Console, result: RunResult | None = None, alongside: Sequence[Alongside] = ()
) -> RunResult:
    """The whole fleet in this process, with the display, until the duration ends or a signal."""
    result = result or RunResult(stats=FleetStats())
    async with trio.open_nursery() as nursery:
        await nursery.start(_stop_on_signal, nursery.cancel_scope, result)
        announce(console, config, 1)
        nursery.start_soon(show_progress, console, lambda: result.stats, config.duration_s)
        outcome = await run_fleet(config, result.stats, alongside=alongside)
        result.finished, result.unreachable = outcome.finished, outcome.unreachable
        nursery.cancel_scope.cancel()
    return result


async def run_with_quorum(config: FleetConfig, plan: QuorumPlan, console: Console) -> RunResult:
    """The fleet in this process against its own quorum (see the module rules)."""
    result = RunResult(stats=FleetStats())
    quorum: Quorum | None = None
    warm_codecs()  # before the quorum: its proxies share this event loop, which this holds for a second or two
    async with trio.open_nursery() as nursery:
        await nursery.start(_stop_on_signal, nursery.cancel_scope, result)
        try:
            async with open_quorum(plan) as quorum:
                (host, port), *others = quorum.controllers
                config = replace(config, controller_host=host, controller_port=port, other_controllers=tuple(others))
                _announce_quorum(console, quorum)
                faults = controller_fault_schedule(
                    config.seed, config.scenario, config.duration_s, timing_of(config), plan.timing
                )
                driver = ControllerFaults(quorum, faults, config.duration_s)
                await run_in_process(config, console, result, alongside=[driver.run])
        except QuorumError as error:
            result.unreachable = str(error)
        nursery.cancel_scope.cancel()
    if quorum is not None:
        result.failures.extend(quorum.failures)
    return result


def _announce_quorum(console: Console, quorum: Quorum) -> None:
    nodes = ", ".join(f"{node} at {host}:{port}" for node, (host, port) in quorum.addresses.items())
    console.print(
        f"quorum: {len(quorum.ids)} controllers ({nodes}), data and logs in {quorum.plan.data_dir}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


async def _stop_on_signal(
    scope: trio.CancelScope, result: RunResult, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for _signal in signals:
            result.interrupted = True
            scope.cancel()
            return


def _final_check(plan: RunPlan) -> FinalCheck | None:
    if plan.data_dir is None and plan.quorum is None:
        return None
    try:
        if plan.quorum is not None:
            return run_quorum_check(plan.quorum.data_dir, plan.quorum.node_dirs, plan.config.journal_path)
        assert plan.data_dir is not None
        return run_final_check(plan.data_dir, plan.config.journal_path)
    finally:
        if plan.journal_is_temporary and plan.config.journal_path is not None:
            plan.config.journal_path.unlink(missing_ok=True)


def _write_report(plan: RunPlan, result: RunResult, final: FinalCheck | None, prog: str, errors: TextIO) -> int:
    """Write the report (when asked); return the run's exit status (1 if the report failed)."""
    status = exit_status(result, final)
    if plan.report_path is None:
        return status
    paths = _paths(plan)
    report = build_report(plan.arguments, result, final, summary_figures(result.stats), paths)
    try:
        write_report(plan.report_path, report)
    except OSError as error:
        print(f"{prog}: error: cannot write the report {plan.report_path}: {error}", file=errors)
        return status or 1
    return status


def _paths(plan: RunPlan) -> dict[str, Path | None]:
    return {
        "report": plan.report_path,
        "journal": None if plan.journal_is_temporary else plan.config.journal_path,
        "capture_dir": plan.config.capture_dir,
        "data_dir": plan.data_dir if plan.quorum is None else plan.quorum.data_dir,
    }


def _verdict(result: RunResult, final: FinalCheck | None, status: int) -> str:
    how = (
        "interrupted"
        if result.interrupted
        else "finished"
        if result.finished
        else f"did not finish ({len(result.failures)} fleet process(es) failed)"
        if result.failures
        else "did not finish"
    )
    violations = len(result.stats.violations) + (0 if final is None else len(final.violations))
    checked = "" if final is None else f", final check of {final.describe()}: {len(final.violations)} violation(s)"
    return f"run {how} in {result.elapsed_s:.1f}s: {violations} violation(s){checked}; exit status {status}"

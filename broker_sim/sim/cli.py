"""`python -m broker_sim sim`: many seeds of the whole cluster under simulation (`broker_sim.sim.run`).

    python -m broker_sim sim --seeds N [--first-seed S] [--scenario NAME] [--voters V]
                             [--brokers B] [--duration SECONDS] [--keep DIR]

Rules:
- Seeds S, S+1, ..., S+N-1 run one after the other (seed K runs the K mod n-th of the n scenarios
  given), each in a fresh directory (under `--keep DIR`,
  kept, as DIR/seed-K; else a temporary one, removed once the seed is clean and kept when it is
  not). A line per seed: its verdict, simulated and real seconds; at the end the totals and the
  ratio of simulated to real time.
- A seed that fails prints its violations (the checker's lines), where its files are, and the one
  command that replays it (`--seeds 1 --first-seed K` with the same options). A seed whose
  simulated clock stands still for `STALL_AFTER_S` real seconds (an endless loop or computation:
  `broker_sim.sim.stall`) is killed and fails so too, `[sim-stall]`.
- Exit status: 0 when every seed is clean, 1 when one is not, 2 on bad arguments (one line on
  stderr, `<prog>: error: <why>`, nothing run).
- The hash seed is fixed (`PYTHONHASHSEED=0`; the command runs itself again with it when it is
  not, `broker_sim.hash_seed`): a seed's run depends on the order of sets of names, which the hash seed decides.
- Each seed runs in a child forked from this process after its imports and patches, and this
  process does nothing else between the forks: a seed's run also depends on the order of sets of
  objects, which their addresses decide, so a seed run after others in one process ran otherwise
  than alone (its replay command). Forked, seed K runs the same whatever ran before it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from broker_sim.cli import CommandLineParser, UsageError, positive_seconds
from broker_sim.hash_seed import ensure_fixed
from broker_sim.model.schedule import ALL_SCENARIOS
from broker_sim.shell.runner import warm_codecs
from protocol.arguments import non_negative_int, positive_int

from .run import SimResult, SimSpec, run_seed, voters_of
from .scenarios import COMPOSED, RAFT_SCENARIOS
from .stall import STALL_AFTER_S, Progress, Publisher, wait_watching

#: every scenario a seed may run: the fleet's, Kafka's Raft simulation's, fencer's own (`scenarios`)
SIM_SCENARIOS = ALL_SCENARIOS + tuple(RAFT_SCENARIOS) + tuple(COMPOSED)

PROG = "python -m broker_sim sim"


def build_parser() -> CommandLineParser:
    parser = CommandLineParser(prog=PROG, description="The whole cluster under deterministic simulation.")
    add = parser.add_argument
    add("--seeds", type=positive_int, required=True, help="how many seeds to run")
    add("--first-seed", type=non_negative_int, default=0, help="the first seed (default 0)")
    add(
        "--scenario",
        type=scenario_list,
        default=SIM_SCENARIOS,
        help=f"a scenario, or several (commas), taken in turn by the seeds (default: every one, in this order): "
        f"{', '.join(SIM_SCENARIOS)}",
    )
    add(
        "--voters",
        type=int,
        choices=range(1, 6),
        help="controller voters, 1-5 (default: 3, or a Raft scenario's seeded choice)",
    )
    add("--brokers", type=positive_int, default=5, help="brokers (default 5)")
    add("--duration", type=positive_seconds, default=40.0, help="simulated seconds per seed (default 40)")
    add("--keep", type=Path, metavar="DIR", help="keep every seed's files under DIR/seed-K")
    add("--stop-at-first", action="store_true", help="stop at the first seed that is not clean")
    # hidden, for tests and the mutation score: MODULE:FUNCTION called before any seed runs (a planted bug)
    add("--patch", action="append", default=[], metavar="MODULE:FUNCTION", help=argparse.SUPPRESS)
    # hidden, for tests: real seconds the simulated clock may stand still (`broker_sim.sim.stall`)
    add("--stall-after", type=positive_seconds, default=STALL_AFTER_S, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str]) -> int:
    try:
        args = build_parser().parse_args(list(argv))
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    ensure_fixed(["sim", *argv])
    for patch in args.patch:
        module, _, function = patch.partition(":")
        getattr(importlib.import_module(module), function)()
    # every codec compiled here once, not in every seed's child (the fleet's run compiles any it
    # finds missing): about half of a short seed's time
    warm_codecs()
    failed = ran = 0
    progress = Progress()
    with tempfile.NamedTemporaryFile("r", prefix="fencer-sim-times-") as times:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            ran += 1
            spec, directory = spec_of(seed, args), directory_of(seed, args)
            progress.publish(-1.0)
            sys.stdout.flush()
            child = os.fork()
            if child == 0:  # the seed, in a process the same as every other seed's (see the rules)
                status = 3
                try:
                    status = one_seed(spec, directory, args, Path(times.name), progress)
                except BaseException:
                    traceback.print_exc()
                finally:
                    sys.stdout.flush()
                    os._exit(status)
            status, stood_at = wait_watching(child, progress, args.stall_after)
            if stood_at is not None:
                status = 1
                print(f"seed {seed}: stalled at {stood_at:.1f} s simulated")
                for line in stall_lines(spec, directory, stood_at, args):
                    print(f"  {line}")
            if status != 0:
                failed += 1
                if status != 1:
                    print(f"seed {seed}: the simulation itself failed (exit status {status})", flush=True)
                if args.stop_at_first:
                    break
        pairs = [line.split() for line in times.read().splitlines()]
    simulated = sum(float(pair[0]) for pair in pairs)
    real = sum(float(pair[1]) for pair in pairs)
    ratio = simulated / real if real else 0.0
    print(
        f"{ran - failed} of {ran} seeds clean; {simulated:.0f} s simulated in {real:.1f} s "
        f"({ratio:.1f} simulated seconds per second)"
    )
    return 1 if failed else 0


def spec_of(seed: int, args: argparse.Namespace) -> SimSpec:
    return SimSpec(
        seed=seed,
        scenario=args.scenario[seed % len(args.scenario)],
        voters=args.voters,
        brokers=args.brokers,
        replication_factor=min(3, args.brokers),
        duration_s=args.duration,
    )


def directory_of(seed: int, args: argparse.Namespace) -> Path:
    return (args.keep / f"seed-{seed}") if args.keep else Path(tempfile.mkdtemp(prefix=f"fencer-sim-{seed}-"))


def one_seed(spec: SimSpec, directory: Path, args: argparse.Namespace, times: Path, progress: Progress) -> int:
    """Run `spec`, print its lines, add its simulated and real seconds to `times`; its status. The
    simulated time reached is published to `progress` as the run goes (`broker_sim.sim.stall`)."""
    started = time.perf_counter()
    result = run_seed(spec, directory, instruments=(Publisher(progress),))
    took = time.perf_counter() - started
    with times.open("a") as sink:
        sink.write(f"{result.simulated_s} {took}\n")
    print(f"seed {spec.seed}: {verdict(result)} ({result.simulated_s:.1f} s simulated in {took:.1f} s)")
    if result.status != 0:
        for line in describe(result, args):
            print(f"  {line}")
        return 1
    if args.keep is None:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


def stall_lines(spec: SimSpec, directory: Path, stood_at: float, args: argparse.Namespace) -> list[str]:
    """The lines of a seed killed for a simulated clock that stood still (`broker_sim.sim.stall`)."""
    return [
        f"[sim-stall] the simulated clock stood still at {stood_at:.1f} s for {args.stall_after:g} real seconds: "
        "a loop or a computation that never ends (in the controller or the fleet) stopped the cluster",
        f"files: {directory}",
        f"replay: {replay_command(spec, args)}",
    ]


def scenario_list(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(","))
    unknown = [name for name in names if name not in SIM_SCENARIOS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown scenario {', '.join(unknown)!r}: one of {', '.join(SIM_SCENARIOS)}")
    return names


def verdict(result: SimResult) -> str:
    if result.status == 0:
        return "clean"
    if result.run.unreachable is not None:
        return f"failed: {result.run.unreachable}"
    return f"{len(result.violations)} violation(s), {len(result.run.failures)} failure(s)"


def describe(result: SimResult, args: argparse.Namespace) -> list[str]:
    lines = [*result.violations, *result.run.failures]
    if result.final is not None:
        lines += list(result.final.problems)
    lines.append(f"files: {result.directory}")
    lines.append(f"replay: {replay_command(result.spec, args)}")
    return lines


def replay_command(spec: SimSpec, args: argparse.Namespace) -> str:
    """The one command that runs `spec`'s seed again, alone, as it ran."""
    options = [f"--scenario {spec.scenario}", f"--voters {voters_of(spec)}", f"--brokers {args.brokers}"]
    options.append(f"--duration {args.duration:g}")
    options += [f"--patch {patch}" for patch in args.patch]
    return f"{PROG} --seeds 1 --first-seed {spec.seed} {' '.join(options)}"

"""`python -m broker_sim sim`: many seeds of the whole cluster under simulation (`broker_sim.sim.run`).

    python -m broker_sim sim --seeds N [--first-seed S] [--scenario NAME] [--voters V]
                             [--brokers B] [--duration SECONDS] [--keep DIR]

Rules:
- Seeds S, S+1, ..., S+N-1 run one after the other, each in a fresh directory (under `--keep DIR`,
  kept, as DIR/seed-K; else a temporary one, removed once the seed is clean and kept when it is
  not). A line per seed: its verdict, simulated and real seconds; at the end the totals and the
  ratio of simulated to real time.
- A seed that fails prints its violations (the checker's lines), where its files are, and the one
  command that replays it (`--seeds 1 --first-seed K` with the same options).
- Exit status: 0 when every seed is clean, 1 when one is not, 2 on bad arguments (one line on
  stderr, `<prog>: error: <why>`, nothing run).
- The hash seed is fixed (`PYTHONHASHSEED=0`; the command runs itself again with it when it is
  not): a seed's run depends on the order of sets of names, which the hash seed decides.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from broker_sim.cli import CommandLineParser, non_negative_int, positive_int, positive_seconds
from broker_sim.model.schedule import ALL_SCENARIOS

from .run import SimResult, SimSpec, run_seed

PROG = "python -m broker_sim sim"


def build_parser() -> CommandLineParser:
    parser = CommandLineParser(prog=PROG, description="The whole cluster under deterministic simulation.")
    add = parser.add_argument
    add("--seeds", type=positive_int, required=True, help="how many seeds to run")
    add("--first-seed", type=non_negative_int, default=0, help="the first seed (default 0)")
    add("--scenario", choices=ALL_SCENARIOS, default="controller-failover", help="the fleet's scenario")
    add("--voters", type=int, choices=(1, 3, 5), default=3, help="controller voters (default 3)")
    add("--brokers", type=positive_int, default=5, help="brokers (default 5)")
    add("--duration", type=positive_seconds, default=40.0, help="simulated seconds per seed (default 40)")
    add("--keep", type=Path, metavar="DIR", help="keep every seed's files under DIR/seed-K")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, "-m", "broker_sim", "sim", *argv])
    failed = 0
    simulated = real = 0.0
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        spec = SimSpec(
            seed=seed,
            scenario=args.scenario,
            voters=args.voters,
            brokers=args.brokers,
            replication_factor=min(3, args.brokers),
            duration_s=args.duration,
        )
        directory = (args.keep / f"seed-{seed}") if args.keep else Path(tempfile.mkdtemp(prefix=f"fencer-sim-{seed}-"))
        started = time.perf_counter()
        result = run_seed(spec, directory)
        took = time.perf_counter() - started
        simulated += result.simulated_s
        real += took
        print(f"seed {seed}: {verdict(result)} ({result.simulated_s:.1f} s simulated in {took:.1f} s)", flush=True)
        if result.status != 0:
            failed += 1
            for line in describe(result, args):
                print(f"  {line}", flush=True)
        elif args.keep is None:
            shutil.rmtree(directory, ignore_errors=True)
    ratio = simulated / real if real else 0.0
    print(
        f"{args.seeds - failed} of {args.seeds} seeds clean; {simulated:.0f} s simulated in {real:.1f} s "
        f"({ratio:.1f} simulated seconds per second)"
    )
    return 1 if failed else 0


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
    options = [f"--scenario {args.scenario}", f"--voters {args.voters}", f"--brokers {args.brokers}"]
    options.append(f"--duration {args.duration:g}")
    lines.append(f"replay: {PROG} --seeds 1 --first-seed {result.spec.seed} {' '.join(options)}")
    return lines

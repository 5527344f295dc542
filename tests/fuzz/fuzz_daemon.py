"""Fuzz the running daemon: valid frames with hostile values, and their bytes mutated, over real TCP.

Run on demand: `make fuzz-daemon` (1,000,000 frames over the four set-ups) or
`.venv/bin/python tests/fuzz/fuzz_daemon.py --frames N [--seed S] [--setups single,tls,...]
[--out DIR] [--jobs J] [--restart-every N]`. Exit status: 0 clean, 1 on any finding, 2 on bad
arguments. The suite runs a short version (tests/fuzz/test_fuzz_daemon.py).
`--replay FINDINGS.jsonl:N` (or `--replay HEX --setups NAME`) sends a finding's frame to a fresh
deployment of its set-up and checks it the same way. A fresh deployment is prepared as every one
is (the same brokers with the same epochs, the same topic names), but the daemon draws new topic
ids, and the run's later state (topics it created, epochs it moved) is not there: a frame that
names those may be refused otherwise than it was.

The decoder fuzzer (fuzz_decode.py) feeds bytes to decoders; this one asks the daemon itself,
with requests it decodes fine but whose values it cannot accept: for every API and version it
serves, a template request (tests/fuzz/daemon/templates.py) made hostile field by field
(daemon/values.py) or mutated byte by byte (daemon/frames.py), against four set-ups of real
daemons (daemon/setups.py: `single`, `tls`, `quorum-leader`, `quorum-follower`). After every
frame (daemon/runner.py, daemon/checks.py): every daemon alive and without a new traceback, a
bystander broker's heartbeats answered within the stall bound (3 s), and a refused request having changed
nothing of the fuzzed node (daemon/observe.py: `/state`, the leader's DescribeQuorum, the
quorum-state file). Every random choice comes from `random.Random(f"{seed}:{setup}")`.

Prints per set-up: frames, answered/closed/refused/accepted, exits, tracebacks, changes after
refused requests, the bystander's p50/p99/max, frames per second; the first finding of each
symptom in full (set-up, frame hex, one-line summary, what happened). Writes every finding as a
JSON line to `--out`/findings.jsonl (set-up, seed, frame index, hex, summary, what, stderr tail)
and the per-set-up counts to `--out`/summary.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import struct
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from protocol.errors import DecodeError
from protocol.registry import peek_request
from tests.fuzz.daemon.frames import Frame, api_name
from tests.fuzz.daemon.runner import SetupResult, SetupRun, run_setup
from tests.fuzz.daemon.setups import SETUPS, daemon_flags

#: seconds a frame takes, relative, two set-ups at a time on 2 cores (80,000 frames, 2026-12-05:
#: 134, 126, 93 and 226 frames/s)
COST = {"single": 1.0, "tls": 1.05, "quorum-leader": 1.45, "quorum-follower": 0.6}


def split(frames: int, setups: list[str]) -> dict[str, int]:
    """`frames` over `setups`, as evenly as can be (the first ones take the remainder)."""
    share, extra = divmod(frames, len(setups))
    return {setup: share + (1 if index < extra else 0) for index, setup in enumerate(setups)}


def run(
    frames: int, seed: int, setups: list[str], out: Path, jobs: int = 2, restart_every: int = 5000, quiet: bool = False
) -> list[SetupResult]:
    """Fuzz each set-up with its share of `frames`, `jobs` set-ups at a time; findings into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    shares = {setup: count for setup, count in split(frames, setups).items() if count}
    files = {setup: out / f"findings-{setup}.jsonl" for setup in shares}
    for path in files.values():
        path.unlink(missing_ok=True)
    options: dict[str, dict[str, Any]] = {
        setup: {
            "findings_file": files[setup],
            "restart_every": restart_every,
            "progress_every": 0 if quiet else max(1000, min(10_000, shares[setup] // 10)),
            "quiet": quiet,
        }
        for setup in shares
    }
    if jobs <= 1 or len(shares) == 1:
        results = [run_setup(setup, count, seed, options[setup]) for setup, count in shares.items()]
    else:
        context = multiprocessing.get_context("spawn")
        # the costliest first, so that the last to finish is a cheap one (measured: see COST)
        order = sorted(shares, key=lambda setup: -shares[setup] * COST[setup])
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = {setup: pool.submit(run_setup, setup, shares[setup], seed, options[setup]) for setup in order}
            results = [futures[setup].result() for setup in shares]
    with open(out / "findings.jsonl", "w") as merged:
        for path in files.values():
            merged.write(path.read_text() if path.exists() else "")
    (out / "summary.json").write_text(json.dumps([summary(result) for result in results], indent=1) + "\n")
    return results


def summary(result: SetupResult) -> dict[str, Any]:
    return {
        "setup": result.setup,
        "seed": result.seed,
        **result.counts,
        "findings": result.findings,
        "symptoms": sorted(result.symptoms),
        "closed_unanswered_by_api": dict(sorted(result.closed_by_api.items())),
        "bystander_errors": dict(sorted(result.bystander_errors.items())),
        "bystander_ms": {
            "heartbeats": len(result.latencies),
            "p50": round(result.percentile(0.5) * 1000, 1),
            "p99": round(result.percentile(0.99) * 1000, 1),
            "max": round(max(result.latencies, default=0.0) * 1000, 1),
        },
        "fuzzing_seconds": round(result.seconds, 1),
        "wall_seconds": round(result.wall_seconds, 1),
        "frames_per_second": round(result.counts["frames"] / result.seconds, 1) if result.seconds else 0.0,
    }


def report(results: list[SetupResult]) -> str:
    lines = []
    for result in results:
        item = summary(result)
        by = item["bystander_ms"]
        lines.append(
            f"{result.setup}: {item['frames']:,} frames in {item['wall_seconds']:.0f} s "
            f"({item['frames_per_second']:.0f}/s while fuzzing); answered {item['answered']:,}, "
            f"closed {item['closed']:,}, stalls {item['stalls']}, refused {item['refused']:,}, "
            f"accepted {item['accepted']:,}; exits {item['exits']}, tracebacks {item['tracebacks']}, "
            f"changes after refused requests {item['refused_changes']}, garbled answers {item['garbled']}; "
            f"bystander: {by['heartbeats']} heartbeats, p50 {by['p50']} ms, p99 {by['p99']} ms, "
            f"max {by['max']} ms, {item['bystander_failures']} unanswered, "
            f"{sum(item['bystander_errors'].values())} answered with errors; restarts {item['restarts']} "
            f"(role changes {item['role_changes']}, unsettled {item['unsettled']}); "
            f"{item['findings']} findings, {len(item['symptoms'])} distinct"
        )
        lines += [f"    - {symptom}" for symptom in item["symptoms"]]
        closed = ", ".join(f"{api} {count}" for api, count in item["closed_unanswered_by_api"].items())
        lines.append(f"    well-formed requests closed unanswered ({item['closed_unanswered']}): {closed or 'none'}")
    return "\n".join(lines)


def replay(hex_frame: str, setup: str, out: Path, summary: str = "") -> int:
    """Send one recorded frame to a fresh deployment of `setup` and check it as the run would."""
    data = bytes.fromhex(hex_frame)
    try:
        key, version, correlation = peek_request(data[4:])
    except DecodeError:
        key, version, correlation = None, -1, None
    (size,) = struct.unpack(">i", data[:4]) if len(data) >= 4 else (-1,)
    well_formed = size == len(data) - 4 and key is not None and "mutated" not in summary
    summary = f"replayed: {summary or f'{api_name(key)} v{version}'}"
    frame = Frame(data, key, version, correlation, summary, well_formed, size != len(data) - 4, 500)
    out.mkdir(parents=True, exist_ok=True)
    result = SetupRun(setup, 1, 0, findings_file=out / "replay.jsonl", restart_every=1).replay(frame)
    print(report([result]))
    return 1 if result.findings else 0


def recorded(argument: str) -> tuple[str, str, str] | None:
    """(hex, set-up, summary) of `FILE.jsonl[:N]`, the N-th finding (from 1) of a findings file."""
    path, _, number = argument.partition(".jsonl")
    lines = Path(path + ".jsonl").read_text().splitlines()
    index = int(number.lstrip(":") or 1) - 1
    if not 0 <= index < len(lines):
        return None
    finding = json.loads(lines[index])
    return finding["hex"], finding["setup"], finding["summary"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fuzz fencer's daemon with hostile frames over real TCP")
    parser.add_argument("--frames", type=int, default=1_000_000, help="frames in all, split over the set-ups")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--setups", default=",".join(SETUPS), help=f"comma-separated, of: {', '.join(SETUPS)}")
    parser.add_argument("--out", type=Path, default=Path("fuzz-daemon-out"), help="where findings are written")
    parser.add_argument("--jobs", type=int, default=2, help="set-ups run at once (processes)")
    parser.add_argument("--restart-every", type=int, default=5000, help="frames before a deployment is started afresh")
    parser.add_argument(
        "--replay",
        metavar="HEX|FILE.jsonl[:N]",
        help="send one frame (its hex, with --setups NAME; or a findings file's N-th) to a fresh deployment",
    )
    args = parser.parse_args(argv)
    setups = [name.strip() for name in args.setups.split(",") if name.strip()]
    unknown = sorted(set(setups) - set(SETUPS))
    if unknown or not setups:
        parser.error(
            f"--setups: unknown set-up(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(SETUPS)}"
        )
    if len(set(setups)) != len(setups):
        parser.error("--setups: a set-up named twice")
    if args.frames < 1 or args.jobs < 1 or args.restart_every < 1:
        parser.error("--frames, --jobs and --restart-every must be >= 1")
    if args.replay is not None:
        return _replay(parser, args.replay, setups, args.out)
    voters_flag = "--allow-unauthenticated-voters" in daemon_flags()
    print(
        f"fuzzing {args.frames:,} frames over {', '.join(setups)} (seed {args.seed}, {args.jobs} at a time); "
        f"the daemon {'has' if voters_flag else 'has no'} --allow-unauthenticated-voters (the TLS quorums need none)",
        flush=True,
    )
    started = time.monotonic()
    results = run(args.frames, args.seed, setups, args.out, jobs=args.jobs, restart_every=args.restart_every)
    print(report(results))
    findings = sum(result.findings for result in results)
    elapsed = time.monotonic() - started
    print(f"{args.frames:,} frames in {elapsed:.0f} s: {findings} findings; see {args.out}/findings.jsonl")
    return 1 if findings else 0


def _replay(parser: argparse.ArgumentParser, argument: str, setups: list[str], out: Path) -> int:
    if ".jsonl" in argument:
        try:
            found = recorded(argument)
        except (OSError, ValueError, KeyError) as exc:
            parser.error(f"--replay: {exc}")
        if found is None:
            parser.error(f"--replay: {argument} has no such finding")
        hex_frame, setup, summary = found
        return replay(hex_frame, setup, out, summary)
    if len(setups) != 1:
        parser.error("--replay HEX needs exactly one set-up in --setups")
    try:
        bytes.fromhex(argument)
    except ValueError:
        parser.error("--replay: neither hex nor a findings file")
    return replay(argument, setups[0], out)


if __name__ == "__main__":
    raise SystemExit(main())

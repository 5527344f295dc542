"""`make mutation-fleet` and `make mutation-sim`: how many single-point bugs in the controller's
decisions the fleet finds, and the simulator (`python -m broker_sim sim`) with the same mutants.

cosmic-ray (PyPI) makes the mutants of `controller/ops`, `controller/state` and `controller/control`
and applies them one at a time, on disk, to a copy of the repository (never to the working tree:
others run code from it); the test that must kill each mutant is the fleet, a short `chaos` run
against the mutated daemon (`python -m controller`, started from the copy), with seeds chosen in
advance: seed 1, then seed 2 only if seed 1 found nothing. cosmic-ray, because its test command is
any shell command (here, `trial` below: a daemon and a fleet, not pytest) and it mutates files on
disk one mutant at a time, so a mutated package runs in a real subprocess; its session database
(SQLite) lets a run be resumed and read afterwards.

    python benchmarks/mutation_fleet.py run [--sample N|all] [--seed S] [--out DIR] [--fleet-seeds 1,2]
                                            [--duration SECONDS] [--resume]
    python benchmarks/mutation_fleet.py report [--out DIR]      # the summary again, from the session
    python benchmarks/mutation_fleet.py trial ...               # cosmic-ray's test command, one mutant

`run` copies the repository's HEAD (`git archive`: committed files only, the commit recorded) twice
under DIR: `tree/` is mutated, `fleet/` stays pristine and runs the fleet and its checker, so a
mutant of a module both halves could share can never blind the judge. The population is every
mutant cosmic-ray's operators make in the three packages, less those inside annotations (every module
there has `from __future__ import annotations`: an annotation is a string never evaluated, so its
mutants are equivalent by construction; they are counted apart). From the rest, a random sample of N
(`random.Random(S)` over the mutants in a stable order: the same N and S give the same mutants) is
run; the others are marked skipped in the session. Outcomes, per mutant:

- killed: the fleet exited non-zero (violations, a check problem, the controller unreachable), or the
  daemon did not start or died during the run;
- survived: every seed's run was clean;
- timeout: a fleet run overran its bound (the trial's own, or cosmic-ray's above it);
- incompetent: cosmic-ray could not apply or test the mutant, or the harness failed on its own.

With `--judge sim` (`make mutation-sim`), the same sample (same N and S) is judged by the simulator
instead: `python -m broker_sim sim` with a fixed budget of seeds (`--sim-seeds`, the scenarios taken
in turn, stopping at the first seed that fails), whose controllers run in its own process. It runs
from `judge/`, where `controller` is the mutated copy's and everything else (the fleet, its
checker, the simulator, the codec) the pristine one's: the checker imports nothing of `controller`,
so the mutant cannot blind it. Killed: the simulator exited non-zero (a violation, a failed run, or a
crash of the mutated code); survived: every seed was clean.

The score is killed / (killed + survived). DIR/summary.md and DIR/summary.json list the counts and
every survivor (file, line, operator, diff), grouped by operator kind and by package.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("controller/ops", "controller/state", "controller/control")
COPIED = ("controller", "protocol", "broker_sim")  # what the daemon and the fleet import
SESSION_TIMEOUT_MS = 3000
VERDICT = "MUTATION-FLEET-VERDICT "
DEFAULT_SAMPLE = 100
#: the simulator's budget per mutant (`--judge sim`): seeds, and the scenarios they take in turn
SIM_SEEDS = 8
#: every scenario whose brokers fault (the fleet's, and fencer's own under failovers), chaos twice:
#: the Raft scripts run `steady` brokers, which reach few of the controller's decisions
SIM_SCENARIOS = (
    "chaos,rolling-restart,controller-failover,disk-failures,chaos,shutdown-during-failover,"
    "offline-replicas-during-failover,overlapping-faults"
)
SIM_DURATION = 30
#: real seconds a seed may take before the trial is a timeout (a clean one takes 1-3 s): for a
#: mutant that slows the run down with the simulated clock still moving (one whose clock stands
#: still for 20 s fails the seed itself, `[sim-stall]`, and is killed)
SIM_SEED_REAL_S = 30
OUTCOMES = ("killed", "survived", "timeout", "incompetent")


# ---------------------------------------------------------------- pure parts (tests/benchmarks/test_mutation_fleet.py)


@dataclass(frozen=True)
class Mutant:
    job_id: str
    path: str  # relative to the copy's root: controller/ops/brokers.py
    operator: str  # core/ReplaceComparisonOperator_Eq_NotEq
    occurrence: int
    line: int
    column: int
    operator_args: str = "{}"

    @property
    def key(self) -> tuple[str, str, str, int]:
        """A stable order: job ids are random uuids, new every `cosmic-ray init`."""
        return (self.path, self.operator, self.operator_args, self.occurrence)

    @property
    def package(self) -> str:
        return package_of(self.path)

    @property
    def kind(self) -> str:
        return operator_kind(self.operator)


def package_of(path: str) -> str:
    for package in PACKAGES:
        if path == package or path.startswith(package + "/"):
            return package
    return str(Path(path).parent)


def operator_kind(operator: str) -> str:
    """`core/ReplaceComparisonOperator_Eq_NotEq` -> `ReplaceComparisonOperator`; `core/AddNot` -> `AddNot`."""
    name = operator.rsplit("/", 1)[-1]
    for family in ("ReplaceComparisonOperator", "ReplaceBinaryOperator", "ReplaceUnaryOperator"):
        if name.startswith(family + "_"):
            return family
    return name


def sample(mutants: Iterable[Mutant], size: int | None, seed: int) -> list[Mutant]:
    """`size` mutants drawn with `random.Random(seed)` from the population in its stable order, returned
    in that order; None (or a size at least the population's) is the whole population."""
    ordered = sorted(mutants, key=lambda m: m.key)
    if size is None or size >= len(ordered):
        return ordered
    chosen = set(random.Random(seed).sample(range(len(ordered)), size))
    return [m for i, m in enumerate(ordered) if i in chosen]


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) of every annotation in a module, as (line, column in characters): parameters,
    returns and annotated assignments."""
    lines = source.splitlines()

    def chars(line: int, byte_column: int) -> int:  # ast columns count UTF-8 bytes, cosmic-ray's characters
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return len(text.encode()[:byte_column].decode(errors="ignore"))

    spans = []
    for node in ast.walk(ast.parse(source)):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for a in annotations:
            if a is not None and a.end_lineno is not None and a.end_col_offset is not None:
                spans.append(
                    ((a.lineno, chars(a.lineno, a.col_offset)), (a.end_lineno, chars(a.end_lineno, a.end_col_offset)))
                )
    return spans


def in_annotation(position: tuple[int, int], spans: Sequence[tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    return any(start <= position < end for start, end in spans)


def classify(worker_outcome: str | None, test_outcome: str | None, output: str | None) -> tuple[str, str]:
    """One of OUTCOMES and why, from cosmic-ray's result and the trial's verdict line in its output
    (cosmic-ray stores its enums' names: NORMAL, KILLED, SKIPPED)."""
    worker_outcome = worker_outcome.lower() if worker_outcome else None
    test_outcome = test_outcome.lower() if test_outcome else None
    if worker_outcome is None:
        return "pending", "not run yet"
    if worker_outcome == "skipped":
        return "skipped", (output or "skipped").strip()
    if worker_outcome == "no-test":
        return "incompetent", "cosmic-ray found nothing to mutate"
    if (output or "").strip() == "timeout":
        return "timeout", "cosmic-ray's timeout"
    verdict = parse_verdict(output)
    if test_outcome == "incompetent" or worker_outcome != "normal":
        return "incompetent", (output or "").strip().splitlines()[-1:][0] if output else worker_outcome
    if verdict is not None:
        return verdict["outcome"], verdict["reason"]
    if test_outcome == "survived":
        return "survived", "test command exited 0 (no verdict line)"
    return "incompetent", "the trial printed no verdict: " + ((output or "").strip().splitlines() or [""])[-1]


def parse_verdict(output: str | None) -> dict[str, Any] | None:
    for line in reversed((output or "").splitlines()):
        if line.startswith(VERDICT):
            verdict: dict[str, Any] = json.loads(line[len(VERDICT) :])
            return verdict
    return None


def trial_verdict(
    *, started: bool, fleet_status: int | None, timed_out: bool, daemon_died: bool, rules: Sequence[str], report: bool
) -> tuple[str, str] | None:
    """One fleet run's verdict, or None when it was clean (the next seed may still kill the mutant)."""
    if not started:
        return "killed", "the daemon did not start"
    if timed_out:
        return "timeout", "the fleet run overran its bound"
    if fleet_status not in (0, None) and rules:
        return "killed", "violations: " + ", ".join(sorted(set(rules)))
    if daemon_died:
        return "killed", "the daemon died during the run"
    if fleet_status == 2:
        return "killed", "the fleet found the controller unreachable (exit 2)"
    if fleet_status not in (0, None):
        if not report:
            return "incompetent", f"the fleet exited {fleet_status} without a report"
        return "killed", f"the fleet exited {fleet_status} (a check problem or a failed run, no violation named)"
    return None


def short_diff(diff: str, tree: Path) -> str:
    """cosmic-ray's diff with the copy's paths made relative (`a/controller/ops/x.py`), its banner dropped."""
    lines = [line for line in diff.splitlines() if line != "--- mutation diff ---"]
    return "\n".join(line.replace(f"/{tree}/", "/").replace(f"{tree}/", "") for line in lines)


def invalid_modules(tree: Path) -> list[str]:
    """The mutated packages' modules that do not compile (a mutant cosmic-ray made that is not Python:
    `*,` in a signature made `//,`): such a mutant is incompetent, not killed."""
    bad = []
    for package in PACKAGES:
        for module in sorted((tree / package).rglob("*.py")):
            try:
                compile(module.read_text(), str(module), "exec", dont_inherit=True)
            except SyntaxError:
                bad.append(module.relative_to(tree).as_posix())
    return bad


def exit_code(outcome: str) -> int:
    return {"survived": 0, "killed": 1, "timeout": 3}.get(outcome, 4)


@dataclass
class Record:
    mutant: Mutant
    outcome: str
    reason: str
    diff: str = ""
    seconds: float | None = None
    seeds: list[int] = field(default_factory=list)
    evidence: dict[str, list[str]] = field(default_factory=dict)  # a kill's fleet output and daemon stderr tails

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self.mutant), "package": self.mutant.package, "kind": self.mutant.kind} | {
            "outcome": self.outcome,
            "reason": self.reason,
            "diff": self.diff,
            "seconds": self.seconds,
            "seeds": self.seeds,
            "evidence": self.evidence,
        }


def summarize(records: Sequence[Record], meta: dict[str, Any]) -> dict[str, Any]:
    counts = Counter(r.outcome for r in records)
    killed, survived = counts["killed"], counts["survived"]
    survivors = [r for r in records if r.outcome == "survived"]
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_package: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(survivors, key=lambda r: (r.mutant.path, r.mutant.line, r.mutant.column, r.mutant.operator)):
        by_kind[r.mutant.kind].append(r.as_json())
        by_package[r.mutant.package].append(r.as_json())
    per_package = {
        package: dict(Counter(r.outcome for r in records if r.mutant.package == package))
        for package in sorted({r.mutant.package for r in records})
    }
    timed = [r.seconds for r in records if r.seconds is not None]
    return {
        **meta,
        "counts": {o: counts[o] for o in (*OUTCOMES, "pending")},
        "score": killed / (killed + survived) if killed + survived else None,
        "score_timeouts_killed": (killed + counts["timeout"]) / (killed + survived + counts["timeout"])
        if killed + survived + counts["timeout"]
        else None,
        "per_package": per_package,
        "kill_reasons": dict(Counter(r.reason for r in records if r.outcome == "killed").most_common()),
        "mean_seconds_per_mutant": sum(timed) / len(timed) if timed else None,
        "survivors_by_kind": dict(sorted(by_kind.items(), key=lambda kv: (-len(kv[1]), kv[0]))),
        "survivors_by_package": dict(sorted(by_package.items())),
        "mutants": [r.as_json() for r in records],
    }


def render_markdown(summary: dict[str, Any]) -> str:
    c = summary["counts"]
    score = summary["score"]
    lines = [
        "# Mutation score of the fleet (`make mutation-fleet`)",
        "",
        f"- commit measured: `{summary.get('commit', '?')}`; started {summary.get('started', '?')}, "
        f"wall time {summary.get('wall_seconds', 0) / 60:.1f} min",
        f"- population: {summary.get('population', '?')} mutants of {', '.join(PACKAGES)} "
        f"(cosmic-ray {summary.get('cosmic_ray', '?')}), plus {summary.get('annotation_mutants', '?')} "
        "inside annotations left out (equivalent: never evaluated)",
        f"- sample: {summary.get('sample_size', '?')} (seed {summary.get('sample_seed', '?')}); fleet: "
        f"{summary.get('fleet', '?')}",
        f"- killed {c['killed']}, survived {c['survived']}, timeout {c['timeout']}, incompetent "
        f"{c['incompetent']}" + (f", not run {c['pending']}" if c.get("pending") else ""),
        "- score killed / (killed + survived): " + (f"**{score:.1%}**" if score is not None else "n/a"),
        "",
        "| package | killed | survived | timeout | incompetent |",
        "|---|---:|---:|---:|---:|",
    ]
    for package, counts in summary["per_package"].items():
        lines.append(f"| `{package}` | " + " | ".join(str(counts.get(o, 0)) for o in OUTCOMES) + " |")
    lines += ["", "## Why the killed were killed", ""]
    lines += [f"- {n} x {reason}" for reason, n in summary["kill_reasons"].items()]
    lines += ["", "## Survivors by kind", ""]
    lines += [f"- {kind}: {len(items)}" for kind, items in summary["survivors_by_kind"].items()] or ["- none"]
    lines += ["", "## Survivors by package", ""]
    for package, items in summary["survivors_by_package"].items():
        lines += [f"### `{package}` ({len(items)})", ""]
        for item in items:
            lines += [
                f"- `{item['path']}:{item['line']}` {item['operator']} (occurrence {item['occurrence']})",
                "",
                "```diff",
                item["diff"].strip(),
                "```",
                "",
            ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the trial: cosmic-ray's test command, one mutant


def start_daemon(tree: Path, data_dir: Path, log: Path, timeout: float = 30.0) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "controller", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir)]
    command += ["--session-timeout-ms", str(SESSION_TIMEOUT_MS)]
    with open(log, "w") as stderr:
        process = subprocess.Popen(command, cwd=tree, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    assert process.stdout is not None
    found: list[int] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("listening on ") and not found:
                found.append(int(line.rsplit(":", 1)[1]))
                break
        for _ in process.stdout:  # drain, so the daemon never blocks on a full pipe
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while not found and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    return process, (found[0] if found else 0)


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def tail(path: Path, lines: int = 5, width: int = 300) -> list[str]:
    """The last `lines` lines of a file, each cut to `width` characters (the evidence of a kill)."""
    if not path.exists():
        return []
    return [line[:width] for line in path.read_text(errors="replace").splitlines()[-lines:]]


def one_fleet_run(
    tree: Path, fleet: Path, work: Path, seed: int, duration: int
) -> tuple[tuple[str, str] | None, dict[str, list[str]]]:
    """One fleet run against the daemon of `tree`: its verdict (None: clean) and, for a verdict, the
    tails of the fleet's output and the daemon's stderr."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    data_dir, report = work / "data", work / "report.json"
    process, port = start_daemon(tree, data_dir, work / "daemon.stderr")
    if not port:
        stop(process)
        verdict = trial_verdict(
            started=False, fleet_status=None, timed_out=False, daemon_died=True, rules=(), report=False
        )
        return verdict, {"daemon": tail(work / "daemon.stderr")}
    env = {**os.environ, "PYTHONPATH": str(fleet), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "broker_sim", "run", f"--controller=127.0.0.1:{port}", "--brokers=5"]
    command += ["--topics=3", "--partitions=4", "--replication-factor=3", f"--duration={duration}", f"--seed={seed}"]
    command += ["--scenario=chaos", "--heartbeat-ms=1000", f"--session-timeout-ms={SESSION_TIMEOUT_MS}"]
    command += [f"--data-dir={data_dir}", f"--report={report}"]
    status: int | None = None
    timed_out = False
    try:
        with open(work / "fleet.out", "w") as out:
            status = subprocess.run(
                command, cwd=fleet, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=duration + 90
            ).returncode
    except subprocess.TimeoutExpired:
        timed_out = True
    daemon_died = process.poll() is not None
    stop(process)
    rules: list[str] = []
    if report.exists():
        data = json.loads(report.read_text())
        check = data.get("check") or {}
        rules = [v["rule"] for v in check.get("violations", [])]
        if data.get("violations") and not rules:
            rules = ["seen during the run"]
    verdict = trial_verdict(
        started=True,
        fleet_status=status,
        timed_out=timed_out,
        daemon_died=daemon_died,
        rules=rules,
        report=report.exists(),
    )
    evidence = {} if verdict is None else {"fleet": tail(work / "fleet.out"), "daemon": tail(work / "daemon.stderr")}
    return verdict, evidence


def one_sim_run(judge: Path, work: Path, seeds: int, scenarios: str, duration: int) -> tuple[str, str] | None:
    """The simulator over `seeds` seeds with `judge`'s code (the mutated controller): its verdict (None: clean)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(judge), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    command = [sys.executable, "-m", "broker_sim", "sim", f"--seeds={seeds}", f"--scenario={scenarios}"]
    command += [f"--duration={duration}", "--brokers=5", "--stop-at-first", f"--keep={work / 'seeds'}"]
    # its own process group: on a timeout the seed it forked goes too (killing the parent alone left
    # the seed's child running, a mutant's endless loop taking a core from every later mutant)
    process = subprocess.Popen(
        command, cwd=judge, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=seeds * SIM_SEED_REAL_S + 60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return "timeout", "the simulator overran its bound"
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if done.returncode == 0:
        return None
    rules = sorted({line.split("]")[0].strip(" [") for line in done.stdout.splitlines() if line.startswith("  [")})
    if done.returncode == 1 and rules:
        return "killed", "violations: " + ", ".join(rules)
    last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1]
    return "killed", f"the simulator exited {done.returncode}: {last[:200]}"


def judge_tree(out: Path, tree: Path, fleet: Path) -> Path:
    """`out/judge`: the mutated `controller`, the pristine everything else (see the module rules)."""
    judge = out / "judge"
    judge.mkdir(exist_ok=True)
    for name in COPIED:
        link = judge / name
        if not link.exists():
            link.symlink_to((tree if name == "controller" else fleet) / name)
    return judge


def trial(args: argparse.Namespace) -> int:
    began = time.monotonic()
    if args.judge == "sim":
        return sim_trial(args, began)
    seeds = [int(s) for s in args.fleet_seeds.split(",")]
    work = Path(args.work)
    ran: list[int] = []
    verdict: tuple[str, str] | None = None
    evidence: dict[str, list[str]] = {}
    invalid = invalid_modules(Path(args.tree))
    if invalid:
        verdict = ("incompetent", "not valid Python: " + ", ".join(invalid))
        seeds = []
    for seed in seeds:
        ran.append(seed)
        verdict, evidence = one_fleet_run(Path(args.tree), Path(args.fleet), work / "current", seed, args.duration)
        if verdict is not None:
            break
    outcome, reason = verdict or ("survived", "clean fleet runs, seeds " + ",".join(map(str, ran)))
    line = {"outcome": outcome, "reason": reason, "seeds": ran, "seconds": round(time.monotonic() - began, 1)}
    if evidence:
        line["evidence"] = evidence
    print(VERDICT + json.dumps(line), flush=True)
    return exit_code(outcome)


def sim_trial(args: argparse.Namespace, began: float) -> int:
    invalid = invalid_modules(Path(args.tree))
    if invalid:
        verdict: tuple[str, str] | None = ("incompetent", "not valid Python: " + ", ".join(invalid))
    else:
        verdict = one_sim_run(
            Path(args.judge_dir), Path(args.work) / "current", args.sim_seeds, args.sim_scenarios, args.sim_duration
        )
    outcome, reason = verdict or ("survived", f"{args.sim_seeds} clean simulated seeds ({args.sim_scenarios})")
    line = {"outcome": outcome, "reason": reason, "seconds": round(time.monotonic() - began, 1)}
    print(VERDICT + json.dumps(line), flush=True)
    return exit_code(outcome)


# ---------------------------------------------------------------- the run: copies, session, sample, exec, summary


def cosmic_ray() -> str:
    return str(Path(sys.executable).parent / "cosmic-ray")


def load_mutants(session: Path, tree: Path) -> list[tuple[Mutant, sqlite3.Row]]:
    db = sqlite3.connect(session)
    db.row_factory = sqlite3.Row
    rows = db.execute(
        "select m.*, r.worker_outcome, r.test_outcome, r.output, r.diff from mutation_specs m "
        "left join work_results r on r.job_id = m.job_id"
    ).fetchall()
    db.close()
    mutants = []
    for row in rows:
        path = Path(row["module_path"]).resolve().relative_to(tree.resolve()).as_posix()
        mutant = Mutant(
            job_id=row["job_id"],
            path=path,
            operator=row["operator_name"],
            occurrence=row["occurrence"],
            line=row["start_pos_row"],
            column=row["start_pos_col"],
            operator_args=json.dumps(json.loads(row["operator_args"] or "{}"), sort_keys=True),
        )
        mutants.append((mutant, row))
    return mutants


def skip(session: Path, job_ids: Iterable[str], why: str) -> None:
    from cosmic_ray.work_db import WorkDB, use_db  # type: ignore[import-untyped]
    from cosmic_ray.work_item import WorkerOutcome, WorkResult  # type: ignore[import-untyped]

    ids = list(job_ids)
    if ids:
        with use_db(str(session), WorkDB.Mode.open) as db:
            db.set_multiple_results(ids, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=why))


def run(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    session, meta_path = out / "session.sqlite", out / "meta.json"
    tree, fleet = out / "tree", out / "fleet"
    size = None if args.sample == "all" else int(args.sample)
    if not args.resume:
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        for copy in (tree, fleet):
            copy.mkdir()
            archive = subprocess.run(
                ["git", "archive", "--format=tar", commit.stdout.strip(), *COPIED], cwd=ROOT, capture_output=True
            )
            subprocess.run(["tar", "-x", "-C", str(copy)], input=archive.stdout, check=True)
        driver = Path(__file__).resolve()
        shutil.copy(driver, out / "mutation_fleet.py")  # the trial runs from a copy too: this file may change
        fleet_seeds = args.fleet_seeds
        budget = len(fleet_seeds.split(",")) * (args.duration + 140) + 60
        test_command = (
            f"{sys.executable} {out / 'mutation_fleet.py'} trial --tree {tree} --fleet {fleet} "
            f"--work {out / 'trial'} --fleet-seeds {fleet_seeds} --duration {args.duration}"
        )
        if args.judge == "sim":
            budget = args.sim_seeds * SIM_SEED_REAL_S + 120
            test_command += (
                f" --judge sim --judge-dir {judge_tree(out, tree, fleet)} --sim-seeds {args.sim_seeds}"
                f" --sim-scenarios {args.sim_scenarios} --sim-duration {args.sim_duration}"
            )
        modules = ", ".join(json.dumps(str(tree / p)) for p in PACKAGES)
        (out / "cosmic-ray.toml").write_text(
            "[cosmic-ray]\n"
            f"module-path = [{modules}]\n"
            f"timeout = {float(budget)}\n"
            "excluded-modules = []\n"
            f"test-command = {json.dumps(test_command)}\n"
            '\n[cosmic-ray.distributor]\nname = "local"\n'
        )
        print(f"mutation-fleet: copies of {commit.stdout.strip()[:12]} in {out}; cosmic-ray init ...", flush=True)
        subprocess.run([cosmic_ray(), "init", str(out / "cosmic-ray.toml"), str(session)], cwd=out, check=True)
        everything = load_mutants(session, tree)
        spans = {path: annotation_spans((tree / path).read_text()) for path in {m.path for m, _ in everything}}
        annotated = [m for m, _ in everything if in_annotation((m.line, m.column), spans[m.path])]
        skip(session, (m.job_id for m in annotated), "equivalent: inside an annotation")
        population = [m for m, _ in everything if not in_annotation((m.line, m.column), spans[m.path])]
        chosen = sample(population, size, args.seed)
        chosen_ids = {m.job_id for m in chosen}
        skip(session, (m.job_id for m in population if m.job_id not in chosen_ids), "not in the sample")
        from importlib.metadata import version

        meta = {
            "commit": commit.stdout.strip(),
            "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "started_epoch": time.time(),
            "cosmic_ray": version("cosmic-ray"),
            "population": len(population),
            "population_by_package": dict(Counter(m.package for m in population)),
            "population_by_kind": dict(Counter(m.kind for m in population).most_common()),
            "annotation_mutants": len(annotated),
            "sample_size": len(chosen),
            "sample_seed": args.seed,
            "fleet": f"chaos, 5 brokers, 3 x 4 partitions, RF 3, {args.duration} s, seeds {fleet_seeds} "
            "(the next only when the previous run was clean), session timeout 3 s, heartbeats 1 s"
            if args.judge == "fleet"
            else f"the simulator: {args.sim_seeds} seeds of {args.sim_duration} simulated s, scenarios "
            f"{args.sim_scenarios} in turn, 3 voters, 5 brokers (up to the first failing seed)",
            "judge": args.judge,
            "command": " ".join(sys.argv),
        }
        meta_path.write_text(json.dumps(meta, indent=2))
        print(
            f"mutation-fleet: population {len(population)} mutants ({len(annotated)} more in annotations, left out); "
            f"sample {len(chosen)} (seed {args.seed})",
            flush=True,
        )
    meta = json.loads(meta_path.read_text())
    total = meta["sample_size"]
    executing = subprocess.Popen(
        [cosmic_ray(), "exec", str(out / "cosmic-ray.toml"), str(session)],
        cwd=out,
        stdout=open(out / "cosmic-ray.log", "a"),  # noqa: SIM115 - the child keeps it
        stderr=subprocess.STDOUT,
    )
    began, last = time.monotonic(), -1
    while executing.poll() is None:
        time.sleep(5)
        done = done_count(session)
        if done != last:
            last = done
            spent = time.monotonic() - began
            print(f"mutation-fleet: {done}/{total} mutants done, {spent / 60:.1f} min", flush=True)
    status = executing.wait()
    meta["finished_epoch"] = time.time()  # `report` later gives the same wall time
    meta_path.write_text(json.dumps(meta, indent=2))
    return write_summary(out, meta) or status


def done_count(session: Path) -> int:
    db = sqlite3.connect(session)
    try:
        (n,) = db.execute("select count(*) from work_results where lower(worker_outcome) != 'skipped'").fetchone()
    finally:
        db.close()
    return int(n)


def write_summary(out: Path, meta: dict[str, Any] | None = None) -> int:
    meta = meta or json.loads((out / "meta.json").read_text())
    records = []
    for mutant, row in load_mutants(out / "session.sqlite", out / "tree"):
        outcome, reason = classify(row["worker_outcome"], row["test_outcome"], row["output"])
        if outcome == "skipped":
            continue
        verdict = parse_verdict(row["output"]) or {}
        records.append(
            Record(
                mutant,
                outcome,
                reason,
                short_diff(row["diff"] or "", out / "tree"),
                verdict.get("seconds"),
                verdict.get("seeds", []),
                verdict.get("evidence", {}),
            )
        )
    meta = {**meta, "wall_seconds": meta.get("finished_epoch", time.time()) - meta["started_epoch"]}
    summary = summarize(records, meta)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "summary.md").write_text(render_markdown(summary))
    c = summary["counts"]
    score = summary["score"]
    print(
        f"mutation-fleet: killed {c['killed']}, survived {c['survived']}, timeout {c['timeout']}, "
        f"incompetent {c['incompetent']}, not run {c['pending']}; score "
        + (f"{score:.1%}" if score is not None else "n/a")
    )
    print(f"summary: {out / 'summary.md'} (and summary.json)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mutation_fleet", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="copy, make the mutants, sample, run each against the fleet")
    run_parser.add_argument("--sample", default=str(DEFAULT_SAMPLE), help="mutants to run, or 'all'")
    run_parser.add_argument("--seed", type=int, default=1, help="the sample's seed")
    run_parser.add_argument("--out", default=str(ROOT / "mutation-out"))
    run_parser.add_argument("--fleet-seeds", default="1,2", help="the fleet's seeds, the next only if clean")
    run_parser.add_argument("--duration", type=int, default=15, help="seconds per fleet run")
    run_parser.add_argument("--resume", action="store_true", help="go on with the session already in --out")
    trial_parser = commands.add_parser("trial", help="cosmic-ray's test command: one mutant against its judge")
    for sub_parser in (run_parser, trial_parser):
        sub_parser.add_argument("--judge", choices=("fleet", "sim"), default="fleet", help="who judges each mutant")
        sub_parser.add_argument("--sim-seeds", type=int, default=SIM_SEEDS, help="the simulator's seeds per mutant")
        sub_parser.add_argument("--sim-scenarios", default=SIM_SCENARIOS, help="the simulator's scenarios, in turn")
        sub_parser.add_argument("--sim-duration", type=int, default=SIM_DURATION, help="simulated seconds per seed")
    report_parser = commands.add_parser("report", help="the summary again, from --out's session")
    report_parser.add_argument("--out", default=str(ROOT / "mutation-out"))
    trial_parser.add_argument("--judge-dir", default="")
    trial_parser.add_argument("--tree", required=True)
    trial_parser.add_argument("--fleet", required=True)
    trial_parser.add_argument("--work", default=tempfile.gettempdir())
    trial_parser.add_argument("--fleet-seeds", default="1,2")
    trial_parser.add_argument("--duration", type=int, default=15)
    args = parser.parse_args(argv)
    if args.command == "trial":
        return trial(args)
    if args.command == "report":
        return write_summary(Path(args.out).resolve())
    if args.sample != "all" and not args.sample.isdigit():
        parser.error("--sample: a number or 'all'")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

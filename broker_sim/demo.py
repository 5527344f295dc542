"""`make demo`: the controller, the fleet's `chaos` scenario with its live display, the invariant
check, and where everything is. `python -m broker_sim.demo [--seconds N] [--output DIR] [--quorum N]`.

With `--quorum N` (`make demo QUORUM=3`) the controller is a quorum of N that the fleet starts and
attacks itself (`broker_sim run --quorum N`: its `chaos` adds SIGKILLs, pauses and cut-offs of
controllers, the leader's failovers in the summary); the check is the quorum check of the N data
dirs, and the analytics job reads the brokers' capture (the quorum's nodes capture nothing).

Steps (each announced by one line):
1. Wipe the output directory (default `./demo-output`, git-ignored) and start the controller
   (`python -m controller`): metadata log in `data/`, capture in `controller-capture/`, logs in
   `controller.log`, the Kafka listener and `/metrics` on free ports of 127.0.0.1.
2. The fleet (`python -m broker_sim run --scenario chaos ...`) on the same terminal, so its live
   display shows; capture in `fleet-capture/`, report `report.json`, journal `journal.jsonl`.
3. Stop the controller with SIGTERM and wait for it (it drains and exits 0).
4. The invariant check on the stopped controller's log with the run's journal
   (`python -m broker_sim check data --journal journal.jsonl --report check.json`).
5. The analytics job over both captures and the fleet's journal (`python -m analytics ... --out
   analysis --journal journal.jsonl`): tables and `analysis/report.html`.
6. The summary and the paths.

Rules: the controller is stopped before the script exits, whatever happens (a Ctrl-C reaches the
fleet too: it stops and reports, and the demo goes on to stop the controller). The exit status is
the first failing step's (the fleet's, then the check's, then the analytics job's), 0 when every
step succeeded; a fleet that could not run at all (exit 2) ends the demo before the check.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from broker_sim.shell.quorum import pick_ports

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class DemoPaths:
    output: Path

    @property
    def data(self) -> Path:
        return self.output / "data"

    @property
    def quorum(self) -> Path:
        """With `--quorum`: node i's data dir is `quorum/node-i`, its log `quorum/node-i.log`."""
        return self.output / "quorum"

    def quorum_nodes(self) -> list[Path]:
        return sorted(path for path in self.quorum.glob("node-*") if path.is_dir())

    @property
    def controller_capture(self) -> Path:
        return self.output / "controller-capture"

    @property
    def controller_log(self) -> Path:
        return self.output / "controller.log"

    @property
    def controller_stdout(self) -> Path:
        return self.output / "controller.out"

    @property
    def fleet_capture(self) -> Path:
        return self.output / "fleet-capture"

    @property
    def report(self) -> Path:
        return self.output / "report.json"

    @property
    def journal(self) -> Path:
        return self.output / "journal.jsonl"

    @property
    def check_report(self) -> Path:
        return self.output / "check.json"

    @property
    def analysis(self) -> Path:
        return self.output / "analysis"

    @property
    def analysis_report(self) -> Path:
        return self.analysis / "report.html"


def start_controller(paths: DemoPaths, metrics_port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "controller", "--data-dir", str(paths.data), "--listen", "127.0.0.1:0"]
    command += ["--capture-dir", str(paths.controller_capture), "--metrics-listen", f"127.0.0.1:{metrics_port}"]
    with open(paths.controller_stdout, "wb") as stdout, open(paths.controller_log, "wb") as stderr:
        return subprocess.Popen(command, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL)


def wait_until_listening(controller: subprocess.Popen[bytes], paths: DemoPaths) -> int:
    """The controller's Kafka port, once its `listening on HOST:PORT` line is out."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        for line in paths.controller_stdout.read_text(errors="replace").splitlines():
            if line.startswith("listening on "):
                return int(line.rsplit(":", 1)[1])
        if controller.poll() is not None:
            raise RuntimeError(f"the controller exited with status {controller.returncode}: see {paths.controller_log}")
        time.sleep(0.1)
    raise RuntimeError(f"the controller did not listen within {START_TIMEOUT_S:g}s: see {paths.controller_log}")


def stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM, then wait (SIGKILL after `STOP_TIMEOUT_S`); the exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return wait(process, STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def wait(process: subprocess.Popen[bytes], timeout: float | None = None) -> int:
    """Wait for a child that shares our terminal: a Ctrl-C reached it too, so keep waiting for it."""
    while True:
        try:
            return process.wait(timeout)
        except KeyboardInterrupt:
            continue


def run_fleet(args: argparse.Namespace, paths: DemoPaths, port: int | None) -> int:
    """The fleet against the controller at `port`, or (None) against a quorum it starts itself."""
    command = [sys.executable, "-m", "broker_sim", "run", "--scenario", "chaos"]
    if port is None:
        command += ["--quorum", str(args.quorum), "--quorum-data-dir", str(paths.quorum)]
    else:
        command += ["--controller", f"127.0.0.1:{port}"]
    command += ["--duration", str(args.seconds), "--seed", str(args.seed), "--brokers", str(args.brokers)]
    command += ["--topics", str(args.topics), "--partitions", str(args.partitions), "--replication-factor", "3"]
    command += ["--capture-dir", str(paths.fleet_capture), "--report", str(paths.report)]
    command += ["--journal", str(paths.journal)]
    return wait(subprocess.Popen(command))


def run_check(paths: DemoPaths, data_dirs: list[Path]) -> int:
    command = [sys.executable, "-m", "broker_sim", "check", *map(str, data_dirs), "--journal", str(paths.journal)]
    return wait(subprocess.Popen([*command, "--report", str(paths.check_report)]))


def analytics_command(paths: DemoPaths) -> list[str] | None:
    """`python -m analytics` over the captures the run left and its journal, into `paths.analysis`
    (None: no capture to analyse). The README's Quick start runs the same job on the same inputs."""
    captures = [str(path) for path in (paths.controller_capture, paths.fleet_capture) if path.exists()]
    if not captures:
        return None
    command = [sys.executable, "-m", "analytics", *captures, "--out", str(paths.analysis)]
    if paths.journal.is_file():  # the fleet's faults and stale replays, marked on the report's timelines
        command += ["--journal", str(paths.journal)]
    return command


def run_analytics(paths: DemoPaths) -> int:
    """The analytics job (Spark local): its tables and `report.html` go to `paths.analysis`. A
    separate process: broker_sim never imports analytics."""
    command = analytics_command(paths)
    if command is None:
        print("demo: no capture to analyse", flush=True)
        return 1
    print(f"demo: the analytics job over {' and '.join(command[3 : command.index('--out')])}", flush=True)
    return subprocess.run(command, check=False).returncode


def summary(
    paths: DemoPaths,
    fleet_status: int,
    check_status: int | None,
    metrics_port: int | None,
    *,
    analytics_skipped: bool = False,
) -> str:
    lines = ["", "demo summary"]
    try:
        report = json.loads(paths.report.read_text())
        stats, outcome = report["stats"], report["outcome"]
        how = "finished" if outcome["finished"] else "interrupted" if outcome["interrupted"] else "did not finish"
        lines.append(
            f"  fleet: {how} in {outcome['elapsed_s']:.0f}s, {sum(stats['requests_by_api'].values())} requests, "
            f"{stats['stale_replays_sent']} stale replays sent ({stats['stale_replays_rejected']} rejected), "
            f"{len(report['violations'])} violation(s); exit status {fleet_status}"
        )
    except (OSError, ValueError, KeyError):
        lines.append(f"  fleet: exit status {fleet_status} (no report)")
    checked = "not run" if check_status is None else f"exit status {check_status} (0: no violation)"
    lines.append(f"  invariant check: {checked}")
    lines.append("  where everything is:")
    controllers = (
        [(f"quorum node {node.name[5:]} (log: {node.name}.log)", node) for node in paths.quorum_nodes()]
        if metrics_port is None
        else [
            ("controller metadata log", paths.data),
            ("controller capture (Parquet)", paths.controller_capture),
            ("controller log", paths.controller_log),
        ]
    )
    for label, path in (
        *controllers,
        ("fleet capture (Parquet)", paths.fleet_capture),
        ("fleet report (JSON)", paths.report),
        ("fleet journal", paths.journal),
        ("check report (JSON)", paths.check_report),
        ("analytics tables (Parquet)", paths.analysis),
        ("analytics report (open it)", paths.analysis_report),
    ):
        skipped = analytics_skipped and label.startswith("analytics")
        note = "  (skipped: --skip-analytics)" if skipped else "" if path.exists() else "  (not written)"
        lines.append(f"    {label + ':':<32} {path}{note}")
    if metrics_port is not None:
        lines.append(f"    {'metrics (while it ran):':<32} http://127.0.0.1:{metrics_port}/metrics")
    return "\n".join(lines)


def demo(args: argparse.Namespace) -> int:
    paths = DemoPaths(args.output)
    shutil.rmtree(paths.output, ignore_errors=True)
    paths.output.mkdir(parents=True)
    if args.quorum:
        print(
            f"demo: the fleet's chaos scenario for {args.seconds:g}s on a quorum of {args.quorum} it starts", flush=True
        )
        fleet_status = run_fleet(args, paths, None)
        data_dirs, metrics_port = paths.quorum_nodes(), None
    else:
        metrics_port = pick_ports(1)[0]
        print(f"demo: starting the controller (data in {paths.data})", flush=True)
        controller = start_controller(paths, metrics_port)
        try:
            port = wait_until_listening(controller, paths)
            print(
                f"demo: controller on 127.0.0.1:{port}, metrics on http://127.0.0.1:{metrics_port}/metrics", flush=True
            )
            print(f"demo: the fleet's chaos scenario for {args.seconds:g}s", flush=True)
            fleet_status = run_fleet(args, paths, port)
        finally:
            print("demo: stopping the controller (SIGTERM)", flush=True)
            controller_status = stop(controller)
        if controller_status != 0:
            print(
                f"demo: the controller exited with status {controller_status}: see {paths.controller_log}", flush=True
            )
        data_dirs = [paths.data]
    if fleet_status not in (0, 1, 130) or not data_dirs:  # 2: it could not run: nothing to check
        print(summary(paths, fleet_status, None, metrics_port), flush=True)
        return fleet_status
    print(f"demo: the invariant check of {', '.join(map(str, data_dirs))}", flush=True)
    check_status = run_check(paths, data_dirs)
    analytics_status = 0 if args.skip_analytics else run_analytics(paths)
    print(summary(paths, fleet_status, check_status, metrics_port, analytics_skipped=args.skip_analytics), flush=True)
    return next((status for status in (fleet_status, check_status, analytics_status) if status != 0), 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker_sim.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the fleet runs (default 60)")
    parser.add_argument("--output", type=Path, default=Path("demo-output"), help="wiped, then filled")
    parser.add_argument("--brokers", type=int, default=6)
    parser.add_argument("--topics", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--quorum",
        type=int,
        default=0,
        metavar="N",
        help="a quorum of N controllers the fleet starts and attacks (make demo QUORUM=3); default: one controller",
    )
    parser.add_argument("--skip-analytics", action="store_true", help="stop after the check (a quick look)")
    args = parser.parse_args(argv)
    try:
        return demo(args)
    except RuntimeError as error:
        print(f"demo: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

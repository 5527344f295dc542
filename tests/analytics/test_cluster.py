"""The job on a real Spark standalone cluster, started from pyspark's own distribution: one master
and one worker (2 cores, 1 GiB: its executor runs two tasks at once; a second worker cost the suite
two JVMs, about 30 CPU s of its 2-core budget, and tested no path one worker does not) on
127.0.0.1, the job submitted with `spark-submit --master spark://...` (the zip with --py-files,
as the docs' command), and everything it writes held to what the same-work baseline
(benchmarks/same_work: one Python process, no JVM) writes from the same captures: every table row
by row, summary.txt and report.html. test_same_work.py holds the baseline to a local run of the
job, table by table, so the cluster's output is the local run's; a second JVM of the job here
(a local spark-submit) cost the 2-core suite about 35 CPU s for no path the two checks miss.
(`python -m analytics` itself is run by test_job.py and the README's Quick start test.)

Each daemon is `bin/spark-class <Master|Worker>` in its own process group, with its own log file,
work dir and local dirs, all under the test's tmp dir (the conf dir is an empty one there, so a
machine's spark-defaults.conf plays no part). Spark 4's master also starts its REST submission
server by default, on the fixed port 6066: it is turned off, so that only free ports are used.
The daemons are stopped (SIGTERM to the group, then SIGKILL) whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pyspark.find_spark_home import _find_spark_home

from analytics.pipeline import TABLES
from benchmarks.same_work import same_work
from broker_sim.shell.quorum import pick_ports

from .submit import assert_ran_from_the_zip, project_zip, spark_submit, story_captures

SPARK_HOME = Path(_find_spark_home())
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
HOST = "127.0.0.1"
WORKERS = 1
WORKER_CORES = 2
START_TIMEOUT_S = 120  # both workers registered with the master (JVMs start slowly on a busy machine)
STOP_TIMEOUT_S = 15  # after SIGTERM, before SIGKILL
JOB_TIMEOUT_S = 400


def free_port() -> int:
    return pick_ports(1)[0]  # below the ephemeral range: nobody's outgoing connection takes it meanwhile


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} ({self.log}), last {lines} lines:\n" + "\n".join(text.splitlines()[-lines:])


@dataclass
class Cluster:
    url: str  # spark://127.0.0.1:PORT
    web: str  # the master's web UI
    daemons: list[Daemon]
    work_dirs: list[Path]  # the workers'
    driver_env: dict[str, str]  # what a driver on this machine needs besides the master's URL

    def state(self) -> dict[str, Any]:
        """The master's own view, as its web UI serves it (`/json/`)."""
        with urllib.request.urlopen(f"{self.web}/json/", timeout=5) as answer:
            state: dict[str, Any] = json.load(answer)
            return state

    def logs(self) -> str:
        return "\n".join(daemon.tail() for daemon in self.daemons)


def spark_env(root: Path, conf: Path, **extra: str) -> dict[str, str]:
    """This environment without Spark settings of its own, everything Spark writes under `root`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SPARK_", "PYSPARK_"))}
    env.pop("PYTHONPATH", None)
    tmp = root / "tmp"
    local = root / "local"
    tmp.mkdir(parents=True)
    local.mkdir()
    return env | {
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_CONF_DIR": str(conf),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_LOCAL_DIRS": str(local),
        "SPARK_LOG_DIR": str(root),
        "SPARK_PID_DIR": str(root),
        "TMPDIR": str(tmp),
        **extra,
    }


def start(name: str, root: Path, env: dict[str, str], arguments: list[str]) -> Daemon:
    """`spark-class ARGUMENTS` in its own process group, stdout and stderr to `root/NAME.log`."""
    log = root / f"{name}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(SPARK_CLASS), *arguments],
            cwd=root / name,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Daemon(name, process, log)


def stop(daemons: list[Daemon]) -> None:
    """SIGTERM to every daemon's process group (workers first), SIGKILL to those still there after
    STOP_TIMEOUT_S, and finally to whatever their groups still hold (executors, Python workers)."""
    for daemon in reversed(daemons):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.process.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for daemon in daemons:
        try:
            daemon.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(daemon.process.pid, signal.SIGKILL)
            daemon.process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(daemon.process.pid, signal.SIGKILL)


def wait_until(cluster: Cluster, what: str, ready: Callable[[dict[str, Any]], bool], deadline: float) -> None:
    """Poll the master's /json/ until `ready(state)`; fail with the daemons' logs if one exits or time runs out."""
    last: object = "no answer yet"
    while time.monotonic() < deadline:
        for daemon in cluster.daemons:
            if daemon.process.poll() is not None:
                pytest.fail(f"{daemon.name} exited with {daemon.process.returncode} while starting\n{cluster.logs()}")
        try:
            state = cluster.state()
            if ready(state):
                return
            last = {"status": state["status"], "workers": [(w["id"], w["state"]) for w in state["workers"]]}
        except (OSError, ValueError, KeyError) as error:
            last = error
        time.sleep(0.5)
    pytest.fail(f"{what} within {START_TIMEOUT_S} s (the master's last answer: {last})\n{cluster.logs()}")


@contextlib.contextmanager
def standalone_cluster(root: Path, workers: int = WORKERS) -> Iterator[Cluster]:
    """A master and `workers` workers under `root`, running until the block ends.

    The workers start once the master is ALIVE: a worker that asks before the master has made
    itself leader gets no answer and tries again 5-15 s later."""
    conf = root / "conf"  # empty: no spark-defaults.conf, no log4j2 file of the machine's
    conf.mkdir(parents=True)
    port, web = free_port(), free_port()
    driver = root / "driver"
    driver.mkdir()
    cluster = Cluster(f"spark://{HOST}:{port}", f"http://{HOST}:{web}", [], [], spark_env(driver, conf))
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        master = root / "master"
        env = spark_env(
            master,
            conf,
            SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
            SPARK_DAEMON_JAVA_OPTS=f"-Djava.io.tmpdir={master / 'tmp'}",
        )
        arguments = ["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port)]
        cluster.daemons.append(start("master", root, env, [*arguments, "--webui-port", str(web)]))
        wait_until(cluster, "the master did not become ALIVE", lambda state: state["status"] == "ALIVE", deadline)
        for number in range(1, workers + 1):
            name = f"worker-{number}"
            work = root / name / "work"
            work.mkdir(parents=True)
            cluster.work_dirs.append(work)
            env = spark_env(
                root / name,
                conf,
                SPARK_WORKER_DIR=str(work),
                SPARK_DAEMON_JAVA_OPTS=f"-Djava.io.tmpdir={root / name / 'tmp'}",
            )
            arguments = [
                "org.apache.spark.deploy.worker.Worker", cluster.url, "--host", HOST, "--cores", str(WORKER_CORES),
                "--memory", "1g", "--work-dir", str(work), "--webui-port", str(free_port()),
            ]  # fmt: skip
            cluster.daemons.append(start(name, root, env, arguments))
        wait_until(
            cluster,
            f"{workers} workers did not register with the master at {cluster.url}",
            lambda state: sum(worker["state"] == "ALIVE" for worker in state["workers"]) >= workers,
            deadline,
        )
        yield cluster
    finally:
        stop(cluster.daemons)


def table(directory: Path) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    """A table's column names, types and rows, sorted by every column (DuckDB's ORDER BY ALL)."""
    parts = sorted(str(part) for part in directory.glob("*.parquet"))
    assert parts, f"{directory} holds no Parquet file"
    with duckdb.connect() as db:
        result = db.execute("SELECT * FROM read_parquet(?) ORDER BY ALL", [parts])
        rows = result.fetchall()
        names = [column[0] for column in result.description]
        types = [str(column[1]) for column in result.description]
    return names, types, rows


def same(left: object, right: object) -> bool:
    """Equal, doubles to 1e-12 relative (a sum's last bit may follow the order partitions meet in)."""
    if isinstance(left, float) and isinstance(right, float):
        return left == right or math.isclose(left, right, rel_tol=1e-12) or (math.isnan(left) and math.isnan(right))
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same(left[key], right[key]) for key in left)
    return left == right


def assert_same_table(name: str, on_cluster: Path, baseline: Path) -> int:
    cluster_names, cluster_types, cluster_rows = table(on_cluster / name)
    baseline_names, baseline_types, baseline_rows = table(baseline / name)
    assert (cluster_names, cluster_types) == (baseline_names, baseline_types), name
    assert len(cluster_rows) == len(baseline_rows), (name, len(cluster_rows), len(baseline_rows))
    for number, (row, expected) in enumerate(zip(cluster_rows, baseline_rows, strict=True)):
        assert same(row, expected), f"{name}, row {number} (sorted): cluster {row} != baseline {expected}"
    return len(baseline_rows)


def finished_application(cluster: Cluster) -> dict[str, Any]:
    """The one application the master lists as completed (it moves there when the driver stops)."""
    deadline = time.monotonic() + 30
    while True:
        state = cluster.state()
        if state["completedapps"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert [app["name"] for app in state["completedapps"]] == ["fencer-analyze"], state
    assert state["activeapps"] == [], state["activeapps"]
    (application,) = state["completedapps"]
    return application


@pytest.mark.slow
def test_the_job_on_a_standalone_cluster_writes_what_a_local_run_writes(tmp_path: Path) -> None:
    captures = story_captures(tmp_path / "captures")
    bundle = project_zip(tmp_path / "fencer.zip")
    baseline_out, cluster_out = tmp_path / "baseline-out", tmp_path / "cluster-out"
    summary = same_work(captures, baseline_out)
    with standalone_cluster(tmp_path / "cluster") as cluster:
        submitted = tmp_path / "submit"
        submitted.mkdir()
        done, _ = spark_submit(
            submitted,
            cluster.url,
            captures,
            cluster_out,
            env=cluster.driver_env,
            timeout=JOB_TIMEOUT_S,
            bundle=bundle,
        )
        assert done.returncode == 0, f"{done.stderr[-6000:]}\n{cluster.logs()}"
        application = finished_application(cluster)
    assert_ran_from_the_zip(done, bundle, cluster_out)

    # it ran on the cluster: the master saw it through, each worker ran an executor for it, they ran its tasks
    assert application["state"] == "FINISHED" and application["cores"] == WORKERS * WORKER_CORES, application
    assert f"Connected to Spark cluster with app ID {application['id']}" in done.stderr
    for work in cluster.work_dirs:  # an executor's dir: its stdout and stderr, and its copy of the zip
        executors = list((work / application["id"]).iterdir())
        assert executors and all((executor / "fencer.zip").is_file() for executor in executors), work
    executor_logs = [log.read_text() for work in cluster.work_dirs for log in work.glob("app-*/*/stderr")]
    assert sum(log.count("Running task") for log in executor_logs) > 0, executor_logs

    # and wrote what a local run writes (the same-work baseline's output, test_same_work.py's)
    assert sorted(path.name for path in cluster_out.iterdir()) == sorted([*TABLES, "report.html", "summary.txt"])
    rows = {name: assert_same_table(name, cluster_out, baseline_out) for name in TABLES}
    assert rows["exchanges"] == 21 and rows["paired_exchanges"] == 1, rows
    assert (cluster_out / "summary.txt").read_text() == "\n".join(summary) + "\n"
    assert (cluster_out / "report.html").read_text() == (baseline_out / "report.html").read_text()

"""The job through the real `spark-submit` script shipped with pyspark, the project shipped to the
executors as a zip with `--py-files` (README shows how): test_cluster.py submits it both to
`local[2]` (README's first command) and to a standalone cluster.

The zip is the only copy of `protocol` and `analytics` the job can import: it runs from an empty
working directory, and the zip's entries come before the installed packages on the path.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pyspark
import pytest

from . import scenario
from .captures import write_capture

ROOT = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"

#: The driver script spark-submit runs: it says where it imported the project from, then runs the job.
DRIVER = (
    "import sys, analytics, protocol\n"
    "print('imported from', analytics.__file__, protocol.__file__, file=sys.stderr)\n"
    "from analytics.job import console\n"
    "console()\n"
)


def project_zip(path: Path) -> Path:
    """protocol/ and analytics/ as a zip for --py-files (Python sources only)."""
    with zipfile.ZipFile(path, "w") as archive:
        for package in ("protocol", "analytics"):
            for source in sorted((ROOT / package).rglob("*")):
                if source.is_file() and "__pycache__" not in source.parts:
                    archive.write(source, source.relative_to(ROOT))
    return path


def story_captures(root: Path) -> list[Path]:
    """The scenario's captures, the controller's and the fleet's, under `root`."""
    write_capture(root / "capture", scenario.controller_rows())
    write_capture(root / "fleet", scenario.fleet_rows(), prefix="fleet")
    return [root / "capture", root / "fleet"]


def spark_submit(
    root: Path,
    master: str,
    captures: Sequence[Path],
    out: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
    bundle: Path | None = None,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The job under pyspark's spark-submit, from an empty working dir under `root`, the project
    shipped as a zip with --py-files (`bundle`, else one made now); the finished run and the zip's path.

    `env` is added to this process's environment (PYTHONPATH and a gateway of a running Spark
    taken out). spark-submit and what it started are killed if it outlives `timeout`."""
    bundle = bundle or project_zip(root / "fencer.zip")
    workdir = root / "work"
    workdir.mkdir()
    main_script = workdir / "analyze.py"
    main_script.write_text(DRIVER)
    environment = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    environment.pop("PYTHONPATH", None)
    environment.pop("PYSPARK_GATEWAY_PORT", None)
    environment.update(env or {})
    command = [
        str(SPARK_SUBMIT), "--master", master, "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=2", "--py-files", str(bundle), str(main_script),
        *map(str, captures), "--out", str(out),
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        cwd=workdir,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the JVM and the Python driver it starts
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"spark-submit --master {master} ran for more than {timeout} s:\n{stderr[-4000:]}")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr), bundle


def assert_ran_from_the_zip(done: subprocess.CompletedProcess[str], bundle: Path, out: Path) -> None:
    assert done.returncode == 0, done.stderr[-4000:]
    # spark-submit passes the Python driver's stderr on to its own stdout
    assert f"imported from {bundle}/analytics/__init__.py {bundle}/protocol/__init__.py" in done.stdout
    assert done.stdout.splitlines()[-1] == f"report: {out / 'report.html'}"

"""The job through the real `spark-submit` script shipped with pyspark: `--master local[2]`, the
project shipped to the executors as a zip with `--py-files` (as on a cluster, README shows how).

The zip is the only copy of `protocol` and `analytics` the job can import: it runs from an empty
working directory, and the zip's entries come before the installed packages on the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pyarrow.dataset as ds
import pyspark
import pytest

from . import scenario
from .captures import write_capture

ROOT = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"


def project_zip(path: Path) -> Path:
    """protocol/ and analytics/ as a zip for --py-files (Python sources only)."""
    with zipfile.ZipFile(path, "w") as archive:
        for package in ("protocol", "analytics"):
            for source in sorted((ROOT / package).rglob("*")):
                if source.is_file() and "__pycache__" not in source.parts:
                    archive.write(source, source.relative_to(ROOT))
    return path


@pytest.mark.slow
def test_the_job_runs_under_spark_submit_with_the_project_as_a_zip(tmp_path: Path) -> None:
    write_capture(tmp_path / "capture", scenario.controller_rows())
    write_capture(tmp_path / "fleet", scenario.fleet_rows(), prefix="fleet")
    bundle = project_zip(tmp_path / "fencer.zip")
    workdir = tmp_path / "work"
    workdir.mkdir()
    main_script = workdir / "analyze.py"
    main_script.write_text(
        "import sys, analytics, protocol\n"
        "print('imported from', analytics.__file__, protocol.__file__, file=sys.stderr)\n"
        "from analytics.job import console\n"
        "console()\n"
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    command = [
        str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=2", "--py-files", str(bundle), str(main_script),
        str(tmp_path / "capture"), str(tmp_path / "fleet"), "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    # spark-submit passes the Python driver's stderr on to its own stdout
    assert f"imported from {bundle}/analytics/__init__.py {bundle}/protocol/__init__.py" in done.stdout
    assert done.stdout.splitlines()[-1] == f"report: {tmp_path / 'out' / 'report.html'}"
    assert ds.dataset(tmp_path / "out" / "exchanges", format="parquet").count_rows() == 21
    assert ds.dataset(tmp_path / "out" / "paired_exchanges", format="parquet").count_rows() == 1

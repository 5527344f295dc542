"""Run the fleet's command line as a user does: `python -m broker_sim ...` in a subprocess, against
the real daemon (`tests/e2e/daemon_process.py`); stdout is a pipe, so the display is plain."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.daemon_process import ROOT, DaemonProcess

TIMEOUT_S = 120.0


def fleet_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "broker_sim", *args]


def run_fleet_command(*args: str, timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        fleet_command(*args),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def start_fleet_command(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        fleet_command(*args),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonProcess]:
    process = DaemonProcess(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.stop()

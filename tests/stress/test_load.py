"""The stress load fails its run on an error answer or a broken connection (the SIGKILL rounds
used to swallow both), but not on the break its own kill causes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.e2e.daemon_process import DaemonProcess

from .load import Load, LoadFailure


def test_an_error_answer_fails_the_run(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "data").start()
    try:
        load = Load(daemon.port, clients=2, rng=random.Random(1))
        load.data_epochs[1] += 1000  # every request as broker 1 is now answered STALE_BROKER_EPOCH
        load.start(daemon.port)
        assert load.stop.wait(30), "no client failed"
        with pytest.raises(LoadFailure, match="error 77"):
            load.halt()
    finally:
        daemon.stop()


def test_a_broken_connection_fails_the_run_unless_the_daemon_was_being_killed(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "data").start()
    load = Load(daemon.port, clients=2, rng=random.Random(1))
    load.start(daemon.port)
    daemon.kill()
    with pytest.raises(LoadFailure, match="Connection"):
        load.halt()
    daemon = DaemonProcess(tmp_path / "data").start()
    load.start(daemon.port)
    load.killing()
    daemon.kill()
    load.halt()

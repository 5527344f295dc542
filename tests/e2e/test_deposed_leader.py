"""A leader deposed while it writes, against three real daemons: it lives on and follows the new
leader to the same log.

Three writers register brokers (each incarnation a record) through whichever node leads while,
round after round, the leader is paused (SIGSTOP) with a commit in flight (its fsync held by a
slow disk) until the other two have elected one of them, then woken. The woken node once stayed
alive and never fetched again: its last batch, written after its leadership ended, was never
reported flushed, and a follower fetches only once its whole log is, so it never truncated its
divergent tail (and a quorum that then lost another voter had no leader).
"""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from . import kio_messages as m
from .kio_client import KioClient
from .test_quorum import CLUSTER, Quorum

pytestmark = pytest.mark.xdist_group("quorum")
ROUNDS = 6


def quorum_state(metrics_port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/state", timeout=10) as answer:
        return dict(json.loads(answer.read())["quorum"])


def write_records(quorum: Quorum, broker_id: int, stop: threading.Event) -> None:
    """Register broker `broker_id` again and again (each incarnation a record) through whichever
    node leads, until `stop`; errors only make it look for the leader again."""
    while not stop.is_set():
        try:
            leader, _ = quorum.leader(timeout=5)
            with KioClient(quorum.port(leader)) as client:
                while not stop.is_set():
                    client.request(m.broker_registration(3, broker_id, CLUSTER, uuid.uuid4(), 9000 + broker_id))
        except (OSError, AssertionError, EOFError):
            time.sleep(0.05)


def test_a_leader_deposed_under_writes_lives_on_and_catches_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "slow"  # while it exists, each fsync of a log segment takes 0.3 s longer
    monkeypatch.setenv("FENCER_SLOW_DISK", str(marker))
    monkeypatch.setenv("FENCER_SLOW_DISK_SECONDS", "0.3")
    quorum = Quorum(tmp_path)
    stop = threading.Event()
    writers = [threading.Thread(target=write_records, args=(quorum, broker, stop)) for broker in (1, 2, 3)]
    try:
        for node in (1, 2, 3):
            quorum.start(node, module="tests.e2e.slow_disk_daemon")
        for writer in writers:
            writer.start()
        for _ in range(ROUNDS):
            leader, answer = quorum.leader()
            process = quorum.nodes[leader].process
            assert process is not None
            marker.touch()
            time.sleep(0.15)  # a commit in flight: its fsync held
            process.send_signal(signal.SIGSTOP)  # past the fetch timeout: the other two elect one of them
            try:
                _, after = quorum.leader(among={1, 2, 3} - {leader}, timeout=20)
                assert after.leader_epoch > answer.leader_epoch
            finally:
                marker.unlink()
                process.send_signal(signal.SIGCONT)
            time.sleep(0.5)
            assert all(node.process is not None and node.process.poll() is None for node in quorum.nodes.values())
        stop.set()
        for writer in writers:
            writer.join(30)
        # every voter follows the leader to the same committed log end
        deadline = time.monotonic() + 20
        while True:
            views = {node: quorum_state(quorum.metrics_ports[node - 1]) for node in (1, 2, 3)}
            ends = {node: (view["log_end_offset"], view["high_watermark"]) for node, view in views.items()}
            if len(set(ends.values())) == 1 and any(view["active_controller"] for view in views.values()):
                break
            assert time.monotonic() < deadline, views
            time.sleep(0.2)
        assert all(node.process is not None and node.process.poll() is None for node in quorum.nodes.values())
    finally:
        stop.set()
        for process in quorum.nodes.values():
            if process.process is not None and process.process.poll() is None:
                process.process.send_signal(signal.SIGCONT)
                process.stop()

"""examples/session.py, run as the controller's page ("A session", docs/controller/index.md) runs it: `python
examples/session.py PORT` against a daemon started with --metrics-listen; what it prints, what the daemon then
holds and counts, and that the page shows the same lines (ids and the elected leader aside)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from .daemon_process import ROOT, DaemonProcess, free_port

PAGE = (ROOT / "docs" / "controller" / "index.md").read_text()
#: What varies from run to run: the cluster id, the topic id, the leader the placement chose.
_VARYING = [
    (re.compile(r"^cluster id: \S+$"), "cluster id: <cluster>"),
    (re.compile(r"\bid [0-9a-f]{8}-[0-9a-f-]{27}$"), "id <topic>"),
    (re.compile(r"^(shrink the ISR to the leader: NONE), isr=\[[12]\]"), r"\1, isr=[<leader>]"),
]


def fetch(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return response.read().decode()  # type: ignore[no-any-return]


def readme_session() -> list[str]:
    """The lines the controller's page shows session.py printing."""
    after = PAGE.split("$ .venv/bin/python examples/session.py 9093\n", 1)[1]
    return after.split("\n$ ", 1)[0].splitlines()


def normalized(lines: list[str]) -> list[str]:
    for pattern, placeholder in _VARYING:
        lines = [pattern.sub(placeholder, line) for line in lines]
    return lines


def test_the_example_session_does_what_it_prints_and_the_readme_shows(tmp_path: Path) -> None:
    metrics_port = free_port()
    daemon = DaemonProcess(tmp_path / "data", "--metrics-listen", f"127.0.0.1:{metrics_port}").start()
    try:
        done = subprocess.run(
            [sys.executable, "examples/session.py", str(daemon.port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        state: dict[str, Any] = json.loads(fetch(metrics_port, "/state"))
        metrics = fetch(metrics_port, "/metrics")
    finally:
        assert daemon.stop() == 0, daemon.stderr()
    assert (done.returncode, done.stderr) == (0, "")
    [topic] = state["topics"]
    [partition] = topic["partitions"]
    leader = partition["leader"]
    printed = done.stdout.splitlines()
    assert printed == [
        f"cluster id: {state['cluster_id']}",
        "broker 1: epoch 1, fenced=False",
        "broker 2: epoch 3, fenced=False",
        f"created topic orders: NONE, id {topic['topic_id']}",
        f"shrink the ISR to the leader: NONE, isr=[{leader}], partition epoch 1",
        "replay the same request (stale partition epoch): INVALID_UPDATE_VERSION, isr=[], partition epoch 0",
    ]
    assert topic["name"] == "orders" and sorted(partition["replicas"]) == [1, 2]
    assert (partition["isr"], partition["partition_epoch"]) == ([leader], 1)  # the shrink is durable, once
    assert [(broker["id"], broker["epoch"], broker["fenced"]) for broker in state["brokers"]] == [
        (1, 1, False),
        (2, 3, False),
    ]
    for error in ("NONE", "INVALID_UPDATE_VERSION"):
        assert f'fencer_requests_total{{api="AlterPartition",error="{error}",version="2"}} 1.0' in metrics
    assert normalized(readme_session()) == normalized(printed)

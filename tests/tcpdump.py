"""Real tcpdump captures for the tests: started, proven to capture, and stopped with its file complete.

tcpdump is required in CI (.ci/run installs it; a missing tcpdump fails there) and a skip elsewhere.
It needs root or CAP_NET_RAW. "listening on" can come before packets are captured (seen on a
sandboxed kernel), so `tcpdump` also listens on a probe port of its own and connects to it until
the file holds a packet; the reader ignores that port (it is not a Kafka port).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

PCAP_HEADER_BYTES = 24


def tool(name: str) -> str:
    """The path of `name` (tcpdump, tshark); a failure in CI, where .ci/run installs both, else a skip when it
    is not installed."""
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is required in CI (.ci/run installs it)")
        pytest.skip(f"{name} is not installed")
    return found


class Capture:
    """A running tcpdump; `dropped` is its "packets dropped by kernel" count once stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.dropped: int | None = None


@contextlib.contextmanager
def tcpdump(path: Path, interface: str, bpf: str, probe_host: str = "127.0.0.1") -> Iterator[Capture]:
    """tcpdump writing `path` from `interface` with the filter `bpf` (or the probe port) while the
    block runs; stopped (SIGTERM: its file flushed and closed) when the block ends."""
    binary = tool("tcpdump")
    probe = socket.socket()
    probe.bind((probe_host, 0))
    probe.listen(8)
    probe_port = probe.getsockname()[1]
    command = [binary, "-i", interface, "-n", "-s", "0", "-U", "--immediate-mode", "-B", "16384"]
    command += ["-w", str(path), f"({bpf}) or (tcp port {probe_port})"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    capture = Capture(path)
    try:
        assert process.stderr is not None
        said = []
        for line in process.stderr:  # "listening on lo, ..." once it captures
            said.append(line)
            if "listening on" in line:
                break
        else:
            pytest.fail(f"tcpdump did not start: {''.join(said)}")
        deadline = time.monotonic() + 20
        while not path.exists() or path.stat().st_size <= PCAP_HEADER_BYTES:
            assert time.monotonic() < deadline, "tcpdump captured no probe in 20 s"
            with socket.create_connection((probe_host, probe_port)):
                probe.accept()[0].close()
            time.sleep(0.05)
        yield capture
        time.sleep(0.2)  # the last packets reach the file (-U writes each as it comes)
    finally:
        process.terminate()
        _, rest = process.communicate(timeout=10)
        probe.close()
        found = re.search(r"(\d+) packets dropped by kernel", rest or "")
        capture.dropped = int(found.group(1)) if found else None

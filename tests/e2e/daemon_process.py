"""Start the real daemon as a subprocess (`python -m controller ...`) and talk to it over TCP.

`DaemonProcess` waits for the `listening on HOST:PORT` line, keeps stderr in a file for the
test's failure message, and stops the process with SIGTERM (or SIGKILL when asked). `module`
runs another entry point with the daemon's arguments (a test copy of the daemon), `wrapper` is a
command line the daemon runs under (e.g. strace), and `spawn` starts it without waiting for it
to listen (to kill it during start-up).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from broker_sim.shell.quorum import pick_ports

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A free port on 127.0.0.1 below the ephemeral range: one bound to port 0 and released can be taken
    again at once by any process's outgoing connection (a clean-clone run lost a daemon's metrics port
    that way), one below the range only by a process that asks for it."""
    return pick_ports(1)[0]


class DaemonProcess:
    def __init__(
        self,
        data_dir: Path,
        *extra: str,
        log_file: Path | None = None,
        module: str = "controller",
        wrapper: Sequence[str] = (),
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.extra = list(extra)
        self.module = module
        self.wrapper = list(wrapper)
        self.preexec_fn = preexec_fn  # runs in the child before exec (e.g. a resource limit)
        self.log_file = log_file or data_dir.parent / f"{data_dir.name}.stderr"
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    def spawn(self) -> DaemonProcess:
        """Start the process and return at once (`start` also waits until it listens)."""
        command = [sys.executable, "-m", self.module, "--listen", "127.0.0.1:0", "--data-dir", str(self.data_dir)]
        self._stderr = open(self.log_file, "a")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [*self.wrapper, *command, *self.extra],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=self.preexec_fn,
        )
        return self

    def start(self, timeout: float = 20.0) -> DaemonProcess:
        return self.spawn().wait_listening(timeout)

    def wait_listening(self, timeout: float = 20.0) -> DaemonProcess:
        """Wait for a spawned daemon's `listening on HOST:PORT` line (its port is then `port`)."""
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith("listening on "):
                self.port = int(line.rsplit(":", 1)[1])
                return self
            if not line and self.process.poll() is not None:
                break
        raise RuntimeError(f"daemon did not start: {line!r}\n{self.stderr()}")

    def stderr(self) -> str:
        return self.log_file.read_text() if self.log_file.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self._stderr.close()
            if self.process.stdout is not None:
                self.process.stdout.close()
        return code

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

"""One controller process of the fleet's own quorum (`Node`), across its restarts: started,
watched until it exits, signalled, killed and stopped; and `QuorumError`, raised when a node does
not start.

Rules:
- A node has started when it prints `listening on HOST:PORT` (within `START_S`); its stdout is
  read to its end after that, so that it never blocks on a full pipe. A node that exits without
  the fleet killing or stopping it is a failure of the run (`failures`, with its exit status and
  its log), as is one that does not start, or does not stop within `STOP_S` of SIGTERM or exits
  non-zero on it.
- `kill` (SIGKILL) waits for the process to be gone; `stop`: SIGCONT to a paused node first, then
  SIGTERM, SIGKILL past `STOP_S`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path

import trio

from .proxy import Address

START_S = 30.0
STOP_S = 20.0
LISTENING = re.compile(rb"listening on \S+\n")


class QuorumError(Exception):
    """The quorum could not be started (the message is one line, naming the node's log)."""


class Node:
    """One controller process of the quorum, across its restarts."""

    def __init__(self, node_id: int, address: Address, data_dir: Path, command: list[str]) -> None:
        self.node_id = node_id
        self.address = address
        self.data_dir = data_dir
        self.log_path = data_dir.with_name(f"{data_dir.name}.log")
        self.command = command
        self.process: trio.Process | None = None
        self.paused = False
        self.cut = False
        self.starts = 0
        self._ours = False  # the fleet ended the current process (kill, stop): its exit is expected

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    @property
    def name(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    async def start(self, nursery: trio.Nursery, failures: list[str]) -> None:
        with open(self.log_path, "ab") as log_file:
            process = await trio.lowlevel.open_process(
                self.command,
                stdout=subprocess.PIPE,
                stderr=log_file,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self.process, self._ours, self.paused = process, False, False
        self.starts += 1
        assert process.stdout is not None
        seen = b""
        with trio.move_on_after(START_S):
            while not LISTENING.search(seen):
                chunk = await process.stdout.receive_some(4096)
                if not chunk:
                    break
                seen += chunk
        if not LISTENING.search(seen):
            self._ours = True
            with contextlib.suppress(OSError):
                process.kill()
            await process.wait()
            raise QuorumError(f"controller node {self.node_id} did not start (see {self.log_path}): {self.tail()}")
        nursery.start_soon(self._drain, process)
        nursery.start_soon(self._watch, process, failures)

    async def _drain(self, process: trio.Process) -> None:
        assert process.stdout is not None
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            while await process.stdout.receive_some(4096):
                pass

    async def _watch(self, process: trio.Process, failures: list[str]) -> None:
        code = await process.wait()
        if not self._ours and process is self.process:
            failures.append(
                f"controller node {self.node_id} exited by itself with status {code} (see {self.log_path}): "
                f"{self.tail()}"
            )

    def tail(self) -> str:
        """The last line of the node's log, for a one-line error."""
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return lines[-1] if lines else "nothing logged"

    def signal(self, signum: int) -> None:
        if self.running:
            assert self.process is not None
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signum)

    async def kill(self) -> None:
        if self.process is None:
            return
        self._ours = True
        self.signal(signal.SIGKILL)
        await self.process.wait()
        self.paused = False

    async def stop(self, failures: list[str]) -> None:
        """SIGCONT if paused, SIGTERM, SIGKILL past `STOP_S` (see the module rules)."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        self._ours = True
        if self.paused:
            self.signal(signal.SIGCONT)
            self.paused = False
        self.signal(signal.SIGTERM)
        with trio.move_on_after(STOP_S):
            code = await process.wait()
            if code != 0:
                failures.append(f"controller node {self.node_id} exited with status {code} on SIGTERM: {self.tail()}")
            return
        failures.append(f"controller node {self.node_id} did not stop within {STOP_S:g}s of SIGTERM: killed")
        self.signal(signal.SIGKILL)
        await process.wait()

"""Blocking connections to the fuzzed daemon: the fuzzer's own, and the bystander broker's.

`FuzzConnection.exchange(frame)` sends one frame on a connection kept across frames (opened
again when the daemon closed it, which is a legitimate answer to a bad frame) and says what came
back within the frame's deadline: an answer (the payload of one frame), a close without an
answer, or nothing (a stall). Before each frame it checks that the daemon did not close the
connection in the meantime, so that a close is blamed on the frame that caused it.

`Bystander` is a broker registered once that heartbeats on its own connection, from its own
thread, every 100-200 ms; each heartbeat must be answered within `HEARTBEAT_DEADLINE`. It keeps every latency, and
every heartbeat that was not answered in time, was closed, or was answered with an error.
"""

from __future__ import annotations

import random
import select
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass

from protocol.error_codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.registry import decode_response, encode_request

from .frames import Frame

#: a frame neither answered nor closed within this long is a stall (a Fetch may be held 500 ms)
STALL_SECONDS = 3.0
#: a bystander's heartbeat not answered within this long is a finding: the frame's stall bound, so
#: that a daemon blocked by a frame is caught and a busy machine's scheduling is not (at 1 s, a
#: clean clone's suite on a loaded 2-core machine, six workers, missed it on a commit that had passed)
HEARTBEAT_DEADLINE = STALL_SECONDS


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: str  # "answered", "closed", "stall" or "unreachable" (no connection could be opened)
    payload: bytes | None  # the answer's frame payload
    seconds: float


def connect(port: int, tls: ssl.SSLContext | None, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls is None:
        return sock
    try:
        return tls.wrap_socket(sock, server_hostname="127.0.0.1")
    except BaseException:
        sock.close()
        raise


def read_frame(sock: socket.socket, deadline: float) -> bytes | None:
    """One frame's payload; None if the peer closed first. `TimeoutError` past the deadline."""
    head = _read_exactly(sock, 4, deadline)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return _read_exactly(sock, size, deadline)


def _read_exactly(sock: socket.socket, count: int, deadline: float) -> bytes | None:
    data = bytearray()
    while len(data) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        try:
            chunk = sock.recv(min(count - len(data), 1 << 20))
        except (ConnectionError, ssl.SSLError):
            return None
        except (TimeoutError, socket.timeout):  # noqa: UP041 - ssl raises the alias on some paths
            raise TimeoutError from None
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def unusable(sock: socket.socket) -> bool:
    """Whether the connection cannot carry the next frame: the daemon closed (or reset) it while
    it was idle, or sent bytes nobody asked for (which would be read as the next frame's answer)."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    sock.setblocking(False)
    try:
        sock.recv(1)  # data or the end of the stream: either way, not for the next frame
        return True
    except (ssl.SSLWantReadError, BlockingIOError):
        return False  # TLS records without data (session tickets)
    except (OSError, ssl.SSLError):
        return True
    finally:
        sock.setblocking(True)


class FuzzConnection:
    """The fuzzer's connection to one daemon; `tls` picks the identity for each new connection."""

    def __init__(self, port: int, identities: list[tuple[str, ssl.SSLContext | None, float]], rng: random.Random):
        self.port = port
        self.identities = identities
        self.rng = rng
        self.sock: socket.socket | None = None
        self.identity = identities[0][0]
        self.connections = 0

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _open(self) -> socket.socket:
        names = [name for name, _, _ in self.identities]
        weights = [weight for _, _, weight in self.identities]
        self.identity = self.rng.choices(names, weights)[0]
        context = next(tls for name, tls, _ in self.identities if name == self.identity)
        self.connections += 1
        return connect(self.port, context)

    def exchange(self, frame: Frame) -> Outcome:
        if self.sock is not None and unusable(self.sock):
            self.close()
        if self.sock is None:
            try:
                self.sock = self._open()
            except (OSError, ssl.SSLError):
                return Outcome("unreachable", None, 0.0)
        sock = self.sock
        started = time.monotonic()
        deadline = started + STALL_SECONDS
        try:
            sock.sendall(frame.data)
            if frame.forged_size:
                return self._until_closed(sock, started, deadline)
            payload = read_frame(sock, deadline)
        except TimeoutError:
            self.close()
            return Outcome("stall", None, time.monotonic() - started)
        except (ConnectionError, ssl.SSLError, OSError):
            payload = None
        if payload is None:
            self.close()
            return Outcome("closed", None, time.monotonic() - started)
        return Outcome("answered", payload, time.monotonic() - started)

    def _until_closed(self, sock: socket.socket, started: float, deadline: float) -> Outcome:
        """After a frame whose size prefix lies: our side shut, wait for the daemon to close."""
        try:
            sock.shutdown(socket.SHUT_WR)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                sock.settimeout(left)
                if not sock.recv(65536):
                    break
        except TimeoutError:
            self.close()
            return Outcome("stall", None, time.monotonic() - started)
        except (OSError, ssl.SSLError):
            pass
        self.close()
        return Outcome("closed", None, time.monotonic() - started)


class Bystander(threading.Thread):
    """A registered broker heartbeating every 100-200 ms on its own connection."""

    def __init__(
        self, port: int, tls: ssl.SSLContext | None, broker_id: int, broker_epoch: int, offset: int, seed: int
    ) -> None:
        super().__init__(daemon=True, name=f"bystander-{broker_id}")
        self.port, self.tls = port, tls
        self.broker_id, self.broker_epoch, self.offset = broker_id, broker_epoch, offset
        self.rng = random.Random(seed)
        self.latencies: list[float] = []
        #: (time the heartbeat was sent, what went wrong)
        self.failures: list[tuple[float, str]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        sock: socket.socket | None = None
        correlation = 0
        while not self.halt.is_set():
            correlation += 1
            request = BrokerHeartbeatRequest(
                broker_id=self.broker_id, broker_epoch=self.broker_epoch, current_metadata_offset=self.offset
            )
            sent = time.monotonic()
            try:
                sock = sock or connect(self.port, self.tls)
                sock.sendall(encode_request(request, 1, correlation, client_id="bystander"))
                payload = read_frame(sock, sent + HEARTBEAT_DEADLINE)
                if payload is None:
                    raise ConnectionError("closed")
                self.latencies.append(time.monotonic() - sent)
                _, answer = decode_response(payload, request.API.key, 1)
                assert isinstance(answer, BrokerHeartbeatResponse)
                if answer.error_code:
                    self.failures.append((sent, f"answered {error_name(answer.error_code)}"))
                continue
            except TimeoutError:
                self.failures.append((sent, f"not answered within {HEARTBEAT_DEADLINE:.0f} s"))
            except (OSError, ssl.SSLError) as exc:
                self.failures.append((sent, f"connection failed: {type(exc).__name__}: {exc}"))
            except ProtocolError as exc:
                self.failures.append((sent, f"answer undecodable: {exc}"))
            finally:
                self.halt.wait(self.rng.uniform(0.1, 0.2))
            if sock is not None:  # a failed exchange: a new connection for the next heartbeat
                sock.close()
                sock = None
        if sock is not None:
            sock.close()

    def stop(self) -> None:
        self.halt.set()
        self.join(5)


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"

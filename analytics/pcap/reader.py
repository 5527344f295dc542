"""A pcap or pcapng file -> Kafka exchanges, counts of other traffic, and problems, streamed in bounded memory.

Purpose: TCP reassembly per connection and direction, Kafka framing of both streams, and the
pairing of responses with requests, in one pass over the packets in file order. `read_pcap` is
the API; `PcapReader` is the same with its counters and its memory high-water mark exposed.

Rules:
- Connections: the key is the 4-tuple; the server is the side whose port is a Kafka port; a
  connection where both or neither port is one is ignored (counted in `stats`). A connection is
  created by a SYN or a segment carrying data (bare ACKs, FINs and RSTs of unknown connections
  are ignored), numbered 1, 2, 3... in order of creation, and freed when both sides' FINs have
  been seen (a hole still open then is given up: a retransmission after both FINs is not waited
  for), at an RST, or at the end of the file; its 4-tuple is then remembered
  (`RECENTLY_CLOSED` of them) so that late packets of it are ignored rather than opening a new
  connection, until a new SYN.
- Reassembly: positions are unwrapped from the 32-bit sequence numbers by signed modular
  distance to the next expected byte (so wrap-around at 2^32 is invisible). Bytes before the
  next expected one are dropped (retransmissions; of overlapping copies the first one delivered
  wins); bytes after it are held until the hole fills. A hole is given up - a `Problem` with the
  exact bytes missing, and the stream's framing resynchronised after it - at once when the other
  side acknowledges bytes beyond it (they reached the receiver: the capture lost them, and no
  retransmission will come), when more than `MAX_HELD` bytes wait behind it, when the connection
  ends (both FINs, RST) or when the file ends. The segments held behind a hole given up are
  delivered at their own arrival times. A hole inside the body of a frame being skipped (an API
  not decoded) loses nothing and is not a problem. Bytes a snap length cut from a packet are a
  hole at once.
- Start: a SYN (or SYN-ACK) gives the stream's start, and framing starts synchronised there. A
  stream seen without its SYN starts unsynchronised at its first byte: framing resynchronises
  (below); the bytes before the first frame boundary are skipped silently.
- Resynchronisation scans every byte offset of the unsynchronised bytes as they arrive (a
  regular expression prefilters, so the scan runs at C speed) and syncs at the first candidate:
  a request candidate is a size in 10..MAX_FRAME, an api key 0..MAX_KAFKA_API_KEY or 1000, a
  version 0..MAX_RESYNC_VERSION, a correlation id >= 0, then a client id (header v1+) of 1..255
  printable ASCII bytes that fits in the frame; a response candidate is a size in 4..MAX_FRAME
  followed by the correlation id of a request pending on the connection. When the frame after
  a candidate begins within the bytes at hand, it must be plausible too (else the candidate is
  rejected); nothing else is checked. A request with a v0 header (ControlledShutdown v0 only) or
  an empty client id is never a resynchronisation point. While no candidate is found only the
  last few bytes (a possible candidate's start) are kept.
- Framing: a request's header is read (size, api key, version, correlation id); a control-plane
  API's (`CONTROL_PLANE_KEYS`: every API the codec decodes but Fetch) frame is kept whole; any
  other's is counted and its body skipped as it streams by, never held. A size above `MAX_FRAME`
  is a problem and the frame is skipped; a size below a header's is a problem and the stream
  resynchronises. A connection whose first frame (either way) has an implausible size (HTTP,
  SSH, MySQL...) is "not-kafka": counted, never parsed.
  A TLS record header where the first frame should be (0x16 0x03 0x00-0x04 after a SYN; any TLS
  record type mid-stream, which no Kafka size under the cap can start with) makes it "tls".
- Pairing: responses match pending requests by correlation id; requests pending before the
  matched one (Kafka answers in order: they will never be answered, e.g. Produce with acks=0)
  are emitted unanswered then, as are all pending at the connection's end. At most
  `MAX_PENDING` requests and `MAX_PENDING_BYTES` of their frames wait per connection; the oldest
  is emitted unanswered beyond. A response that matches nothing is counted (kind "kafka", api key
  None). Times are those of the packets that completed each frame.
- Nothing in the file's content raises: a file that cannot be read is one `Problem`; a
  truncated file gives everything before the cut, then its connections' ends, then a `Problem`.
"""

from __future__ import annotations

import heapq
import re
import socket
import struct
from collections import Counter, OrderedDict, deque
from collections.abc import Iterator
from typing import BinaryIO

from protocol.api_keys import ApiKey
from protocol.capture import INBOUND
from protocol.registry import api_keys

from .files import FileCorrupt, FileRefused, FileTruncated, read_packets
from .items import DEFAULT_KAFKA_PORTS, KIND_KAFKA, KIND_NOT_KAFKA, KIND_TLS, Other, PcapExchange, Problem
from .kafka_apis import MAX_KAFKA_API_KEY
from .packets import DROPS, LINK_TYPES, TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN, Segment, segment

#: Out-of-order bytes held per direction behind a hole before the hole is given up as lost.
MAX_HELD = 4 * 1024 * 1024
#: The largest frame read (Kafka's socket.request.max.bytes default); bigger ones are problems, skipped.
MAX_FRAME = 100 * 1024 * 1024
#: Requests waiting for their response per connection, and the bytes of their frames.
MAX_PENDING = 1024
MAX_PENDING_BYTES = 64 * 1024 * 1024
#: Closed connections' 4-tuples remembered, so that their late packets do not open new connections.
RECENTLY_CLOSED = 65536
#: Ignored (not Kafka) 4-tuples remembered, to count them once each.
IGNORED_REMEMBERED = 65536
#: The highest request api version a resynchronisation accepts (Kafka 3.9's highest is Fetch's 17).
MAX_RESYNC_VERSION = 20
#: fencer's own API key (AlterReplicaState), besides Kafka's.
FENCER_API_KEY = 1000

_MASK = 0xFFFFFFFF
_HALF = 1 << 31
_REQUEST_HEAD = struct.Struct(">ihhi")  # size, api key, api version, correlation id
_RESPONSE_HEAD = struct.Struct(">ii")  # size, correlation id
_INT32 = struct.Struct(">i")
_CLIENT_ID_LENGTH = struct.Struct(">h")
_MIN_REQUEST = 8  # api key, version, correlation id
_MIN_RESPONSE = 4  # correlation id
_REQUEST_PROBE = 14  # size, key, version, correlation id, client id length
_RESPONSE_PROBE = 8


#: The APIs whose frames are kept whole and decoded: the codec's (`protocol.registry.api_keys()`) but
#: Fetch, which is data plane on a broker's port (consumers' and followers' records, responses of up to
#: `MAX_FRAME`): it is counted like Produce. KRaft's own Fetch of `__cluster_metadata` between
#: controllers is counted with it until the quorum makes those exchanges part of the tables.
CONTROL_PLANE_KEYS = frozenset(api_keys()) - {int(ApiKey.FETCH)}


def _byte_range(low: int, high: int) -> bytes:
    return b"[" + re.escape(bytes([low])) + b"-" + re.escape(bytes([high])) + b"]"


#: Where a request may start: the size's top byte (MAX_FRAME < 2^27), the api key, the version and the
#: client id length (1..255); the rest is checked in Python (`_plausible_request`).
_REQUEST_CANDIDATE = re.compile(
    b"(?=" + _byte_range(0, MAX_FRAME >> 24) + b"..."
    b"(?:\x00" + _byte_range(0, MAX_KAFKA_API_KEY) + b"|" + re.escape(struct.pack(">h", FENCER_API_KEY)) + b")"
    b"\x00" + _byte_range(0, MAX_RESYNC_VERSION) + b"...."
    b"\x00[\x01-\xff])",
    re.DOTALL,
)
_PRINTABLE = re.compile(b"[\x20-\x7e]*")


def _plausible_request(buffer: bytearray, at: int) -> bool | None:
    """Whether a request header (v1+: with a client id) can start at `at`; None if the bytes are not all in view.

    The size fits its header and the cap, the api key is Kafka's (0..MAX_KAFKA_API_KEY) or fencer's, the
    version is at most MAX_RESYNC_VERSION, the correlation id is not negative, and the client id is 1..255
    printable ASCII bytes (clients name themselves; runs of zeros would otherwise look like empty ones)."""
    if len(buffer) < at + _REQUEST_PROBE:
        return None
    if not _REQUEST_CANDIDATE.match(buffer, at):
        return False
    size, _key, _version, correlation = _REQUEST_HEAD.unpack_from(buffer, at)
    client_id = _CLIENT_ID_LENGTH.unpack_from(buffer, at + 12)[0]
    if correlation < 0 or not 0 < client_id < 256 or not 10 + client_id <= size <= MAX_FRAME:
        return False
    if len(buffer) < at + _REQUEST_PROBE + client_id:
        return None
    return _PRINTABLE.fullmatch(buffer, at + _REQUEST_PROBE, at + _REQUEST_PROBE + client_id) is not None


def _tls_record(data: bytes | bytearray, mid_stream: bool) -> bool:
    """A TLS record header: a handshake (or, mid-stream, any content type) of TLS 1.0-1.3 (or SSL 3)."""
    if len(data) < 3 or data[1] != 3 or data[2] > 4:
        return False
    return data[0] == 0x16 or (mid_stream and 0x14 <= data[0] <= 0x17)


def _address(ip: bytes, port: int) -> str:
    if len(ip) == 4:
        return f"{socket.inet_ntop(socket.AF_INET, ip)}:{port}"
    return f"[{socket.inet_ntop(socket.AF_INET6, ip)}]:{port}"


class _Pending:
    __slots__ = ("api_key", "api_version", "correlation_id", "request", "size", "time_ns")

    def __init__(
        self, api_key: int, api_version: int, correlation_id: int, request: bytes | None, size: int, time_ns: int
    ) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.request = request  # None for an API that is not decoded
        self.size = size
        self.time_ns = time_ns


class _Side:
    """One direction of a connection: its reassembly and its framing."""

    __slots__ = (
        "base",
        "buffer",
        "conn",
        "delivered",
        "fin",
        "held",
        "held_bytes",
        "mid_stream",
        "name",
        "offset",
        "order",
        "peer_ack",
        "skip",
        "synced",
    )

    def __init__(self, conn: _Connection, name: str) -> None:
        self.conn = conn
        self.name = name  # "client" | "server"
        self.base: int | None = None  # the sequence number of stream offset 0
        self.offset = 0  # the next stream offset expected
        #: a heap of (offset, arrival order, payload, missing after it, arrival time)
        self.held: list[tuple[int, int, bytes, int, int]] = []
        self.held_bytes = 0
        self.order = 0
        self.fin: int | None = None  # the stream offset of the FIN
        self.peer_ack: int | None = None  # the last acknowledgement number the other side sent
        self.synced = False
        self.mid_stream = False
        self.skip = 0  # bytes of a frame body still to skip
        self.buffer = bytearray()
        self.delivered = 0  # bytes delivered to framing (the stream's size, for tls and not-kafka counts)

    @property
    def done(self) -> bool:
        """This side sent its FIN (whether or not every byte before it arrived)."""
        return self.fin is not None

    def next_seq(self) -> int:
        return ((self.base or 0) + self.offset) & _MASK

    # reassembly

    def segment(self, seq: int, flags: int, payload: bytes, missing: int, now: int) -> None:
        if flags & TCP_SYN:
            seq = (seq + 1) & _MASK
            if self.base is None:
                self.base, self.synced = seq, True
        if self.base is None:
            self.base, self.mid_stream = seq, True
        position = self.offset + (((seq - self.next_seq() + _HALF) & _MASK) - _HALF)
        length = len(payload) + missing
        if flags & TCP_FIN:
            self.fin = position + length
        if not length:
            return
        if position <= self.offset:
            self._advance(position, payload, missing, now)
            if self.held:
                self._drain(now)
        else:
            self.order += 1
            heapq.heappush(self.held, (position, self.order, payload, missing, now))
            self.held_bytes += len(payload)
            if self.held_bytes > MAX_HELD:
                self.give_up_hole(now, f"{self.held_bytes:,} bytes held behind it (a lost packet)")
            elif self.peer_ack is not None:
                self.acked(self.peer_ack, now)
            self.conn.reader.note_held(self.held_bytes + len(self.buffer))

    def _advance(self, position: int, payload: bytes, missing: int, now: int) -> None:
        trim = self.offset - position
        if trim > 0:
            if trim >= len(payload):
                missing -= trim - len(payload)
                payload = b""
                if missing <= 0:
                    return
            else:
                payload = payload[trim:]
        if payload:
            self.offset += len(payload)
            self.deliver(payload, now)
        if missing > 0:
            self.offset += missing
            self.gap(missing, now, "not captured: the snap length cut the packet")

    def _drain(self, now: int | None) -> None:
        """Deliver the held segments the stream has reached, at `now` (the packet that filled the hole) or, if
        None (a hole given up), each at its own arrival time."""
        held = self.held
        while held and held[0][0] <= self.offset:
            position, _, payload, missing, arrival = heapq.heappop(held)
            self.held_bytes -= len(payload)
            self._advance(position, payload, missing, arrival if now is None else now)

    def give_up_hole(self, now: int, cause: str) -> None:
        """Skip the hole before the first held segment (a problem unless the framing loses nothing)."""
        hole = self.held[0][0] - self.offset
        seq = self.next_seq()
        self.offset += hole
        self.gap(hole, now, cause, seq)
        self._drain(None)

    def acked(self, ack: int, now: int) -> None:
        """The peer acknowledged up to `ack`: a hole it acknowledged will never be retransmitted."""
        self.peer_ack = ack
        while self.held:
            acknowledged = self.offset + (((ack - self.next_seq() + _HALF) & _MASK) - _HALF)
            if acknowledged < self.held[0][0]:
                return
            self.give_up_hole(now, "acknowledged by the peer but not captured: a packet the capture lost")

    # framing

    def deliver(self, data: bytes, now: int) -> None:
        conn = self.conn
        if not self.delivered and self.mid_stream and _tls_record(data, mid_stream=True) and not conn.frames:
            conn.tls = True
        self.delivered += len(data)
        if conn.tls or conn.not_kafka:
            return
        if self.skip:
            if len(data) <= self.skip:
                self.skip -= len(data)
                return
            data = data[self.skip :]
            self.skip = 0
        self.buffer += data
        if self.name == "client":
            self._requests(now)
        else:
            self._responses(now)
        self.conn.reader.note_held(self.held_bytes + len(self.buffer))

    def gap(self, missing: int, now: int, cause: str, seq: int | None = None) -> None:
        conn = self.conn
        if conn.tls or conn.not_kafka:
            return
        if self.skip >= missing:  # inside a body being skipped: nothing lost
            self.skip -= missing
            conn.reader.stats["holes-in-skipped-bodies"] += 1
            return
        at = self.next_seq() - missing if seq is None else seq
        conn.problem(
            now,
            f"tcp: {missing:,} bytes missing from the {self.name}'s stream at seq {at & _MASK} ({cause}); "
            "decoding resumes at the next plausible frame boundary",
            missing,
        )
        self.skip = 0
        self.buffer.clear()
        self.synced = False

    def _requests(self, now: int) -> None:
        conn = self.conn
        buffer = self.buffer
        end = len(buffer)
        pos = 0
        while pos < end:
            if not self.synced:
                pos = self._resync_request(pos)
                if not self.synced:
                    break
            available = end - pos
            if not conn.frames and _tls_record(buffer[pos : pos + 3], mid_stream=False):
                conn.tls = True
                pos = end
                break
            if available < 12:
                break
            size, key, version, correlation = _REQUEST_HEAD.unpack_from(buffer, pos)
            if size < _MIN_REQUEST or size > MAX_FRAME:
                if not conn.frames:
                    conn.not_kafka = True
                    pos = end
                    break
                if size > MAX_FRAME:
                    conn.problem(now, f"kafka: a request of {size:,} bytes is over the {MAX_FRAME:,}-byte cap: skipped")
                    pos, self.skip = self._skip_frame(pos, size, end)
                    continue
                conn.problem(now, f"kafka: a request size of {size} in the client's stream; resynchronising")
                self.synced = False
                pos += 1
                continue
            if key in conn.reader.control:
                if available < 4 + size:
                    break
                conn.request(key, version, correlation, bytes(buffer[pos + 4 : pos + 4 + size]), size, now)
                pos += 4 + size
            else:
                conn.request(key, version, correlation, None, size, now)
                pos, self.skip = self._skip_frame(pos, size, end)
        if pos:
            del buffer[:pos]

    @staticmethod
    def _skip_frame(pos: int, size: int, end: int) -> tuple[int, int]:
        """(new position, bytes still to skip) for a frame at `pos` that is not kept."""
        frame_end = pos + 4 + size
        return (frame_end, 0) if frame_end <= end else (end, frame_end - end)

    def _resync_request(self, pos: int) -> int:
        """The first plausible request at or after `pos` (then synced), or where to resume scanning."""
        buffer = self.buffer
        stats = self.conn.reader.stats
        while True:
            found = _REQUEST_CANDIDATE.search(buffer, pos)
            if found is None:
                keep = max(pos, len(buffer) - (_REQUEST_PROBE - 1))
                stats["resync-bytes-skipped"] += keep - pos
                return keep
            start = found.start()
            stats["resync-bytes-skipped"] += start - pos
            verdict = _plausible_request(buffer, start)
            if verdict is None:
                return start  # wait for more bytes
            if verdict:
                size = _INT32.unpack_from(buffer, start)[0]
                following = _plausible_request(buffer, start + 4 + size)  # confirmed by the next one if in view
                if following is None or following:
                    self.synced = True
                    return start
            stats["resync-candidates-rejected"] += 1
            pos = start + 1

    def _responses(self, now: int) -> None:
        conn = self.conn
        buffer = self.buffer
        end = len(buffer)
        pos = 0
        while pos < end:
            if not self.synced:
                pos = self._resync_response(pos)
                if not self.synced:
                    break
            available = end - pos
            if available < 8:
                break
            size, correlation = _RESPONSE_HEAD.unpack_from(buffer, pos)
            if size < _MIN_RESPONSE or size > MAX_FRAME:
                if not conn.frames:
                    conn.not_kafka = True
                    pos = end
                    break
                if size > MAX_FRAME:
                    conn.problem(
                        now, f"kafka: a response of {size:,} bytes is over the {MAX_FRAME:,}-byte cap: skipped"
                    )
                    pos, self.skip = self._skip_frame(pos, size, end)
                    continue
                conn.problem(now, f"kafka: a response size of {size} in the server's stream; resynchronising")
                self.synced = False
                pos += 1
                continue
            entry = conn.find_pending(correlation)
            if entry is None:  # its request was lost, held behind a hole, or before the capture
                conn.count(KIND_KAFKA, None, None, 0, 1, 0, size, now)
                pos, self.skip = self._skip_frame(pos, size, end)
            elif entry.request is not None:
                if available < 4 + size:
                    break
                conn.respond(entry, bytes(buffer[pos + 4 : pos + 4 + size]), size, now)
                pos += 4 + size
            else:
                conn.respond(entry, None, size, now)
                pos, self.skip = self._skip_frame(pos, size, end)
        if pos:
            del buffer[:pos]

    def _resync_response(self, pos: int) -> int:
        """The first plausible response at or after `pos` (then synced), or where to resume scanning."""
        buffer = self.buffer
        pending = self.conn.pending_ids
        best: int | None = None
        for correlation in pending:
            needle = _INT32.pack(correlation)
            at = buffer.find(needle, pos + 4)
            while at >= 0 and (best is None or at - 4 < best):
                size = _INT32.unpack_from(buffer, at - 4)[0]
                following = at + size
                if _MIN_RESPONSE <= size <= MAX_FRAME and (
                    following + 8 > len(buffer)  # the next response is not in view: nothing to confirm with
                    or (
                        _MIN_RESPONSE <= _INT32.unpack_from(buffer, following)[0] <= MAX_FRAME
                        and _INT32.unpack_from(buffer, following + 4)[0] in pending
                    )
                ):
                    best = at - 4
                    break
                at = buffer.find(needle, at + 1)
        stats = self.conn.reader.stats
        if best is None:
            keep = max(pos, len(buffer) - (_RESPONSE_PROBE - 1))
            stats["resync-bytes-skipped"] += keep - pos
            return keep
        stats["resync-bytes-skipped"] += best - pos
        self.synced = True
        return best

    def finish(self, now: int, cause: str) -> None:
        """The stream ends: give up its holes, then report a frame cut short."""
        while self.held:
            self.give_up_hole(now, cause)
        conn = self.conn
        if self.buffer and self.synced and not (conn.tls or conn.not_kafka):
            kind = "request" if self.name == "client" else "response"
            conn.problem(now, f"kafka: the {self.name}'s stream ended inside a {kind} ({len(self.buffer):,} bytes)")
        self.buffer.clear()


class _Connection:
    __slots__ = (
        "client",
        "first_ns",
        "frames",
        "id",
        "last_ns",
        "not_kafka",
        "others",
        "peer",
        "pending",
        "pending_bytes",
        "pending_ids",
        "reader",
        "server",
        "server_side",
        "tls",
    )

    def __init__(self, reader: PcapReader, number: int, peer: str, server: str, now: int) -> None:
        self.reader = reader
        self.id = number
        self.peer = peer
        self.server = server
        self.client = _Side(self, "client")
        self.server_side = _Side(self, "server")
        self.pending: deque[_Pending] = deque()
        self.pending_ids: Counter[int] = Counter()
        self.pending_bytes = 0
        self.others: dict[tuple[str, int | None, int | None], list[int]] = {}
        self.frames = 0
        self.tls = False
        self.not_kafka = False
        self.first_ns = self.last_ns = now

    def problem(self, now: int, reason: str, missing: int | None = None) -> None:
        self.reader.out.append(Problem(now, self.id, self.peer, self.server, reason, missing))

    def count(
        self,
        kind: str,
        key: int | None,
        version: int | None,
        requests: int,
        responses: int,
        request_bytes: int,
        response_bytes: int,
        now: int,
    ) -> None:
        self.frames += 1
        found = self.others.get((kind, key, version))
        if found is None:
            self.others[(kind, key, version)] = [requests, responses, request_bytes, response_bytes, now, now]
        else:
            found[0] += requests
            found[1] += responses
            found[2] += request_bytes
            found[3] += response_bytes
            found[5] = now

    def request(self, key: int, version: int, correlation: int, payload: bytes | None, size: int, now: int) -> None:
        if payload is None:
            self.count(KIND_KAFKA, key, version, 1, 0, size, 0, now)
        else:
            self.frames += 1
            self.pending_bytes += size
        self.pending.append(_Pending(key, version, correlation, payload, size, now))
        self.pending_ids[correlation] += 1
        while len(self.pending) > MAX_PENDING or self.pending_bytes > MAX_PENDING_BYTES:
            self.reader.stats["pending-evicted"] += 1
            self._unanswered(self._pop())

    def find_pending(self, correlation: int) -> _Pending | None:
        if correlation not in self.pending_ids:
            return None
        for entry in self.pending:
            if entry.correlation_id == correlation:
                return entry
        raise AssertionError("pending_ids and pending disagree")

    def respond(self, entry: _Pending, payload: bytes | None, size: int, now: int) -> None:
        """`entry`'s response: the requests pending before it will never be answered."""
        while True:
            first = self._pop()
            if first is entry:
                break
            self._unanswered(first)
        if entry.request is None:
            self.count(KIND_KAFKA, entry.api_key, entry.api_version, 0, 1, 0, size, now)
        else:
            self.frames += 1
            self.reader.out.append(self._exchange(entry, now, payload))

    def _pop(self) -> _Pending:
        entry = self.pending.popleft()
        self.pending_ids[entry.correlation_id] -= 1
        if not self.pending_ids[entry.correlation_id]:
            del self.pending_ids[entry.correlation_id]
        if entry.request is not None:
            self.pending_bytes -= entry.size
        return entry

    def _unanswered(self, entry: _Pending) -> None:
        if entry.request is not None:
            self.reader.out.append(self._exchange(entry, None, None))

    def _exchange(self, entry: _Pending, response_ns: int | None, response: bytes | None) -> PcapExchange:
        assert entry.request is not None
        return PcapExchange(
            entry.time_ns,
            response_ns,
            INBOUND,
            self.id,
            self.peer,
            entry.api_key,
            entry.api_version,
            entry.correlation_id,
            entry.request,
            response,
            self.server,
        )

    def close(self, now: int, cause: str) -> None:
        """The connection ends: its holes, its unanswered requests, its counts."""
        self.client.finish(now, cause)
        self.server_side.finish(now, cause)
        while self.pending:
            self._unanswered(self._pop())
        out = self.reader.out
        client_bytes, server_bytes = self.client.delivered, self.server_side.delivered
        if self.tls:
            out.append(
                Other(
                    KIND_TLS,
                    self.id,
                    self.peer,
                    self.server,
                    None,
                    None,
                    0,
                    0,
                    client_bytes,
                    server_bytes,
                    self.first_ns,
                    self.last_ns,
                )
            )
        elif self.not_kafka or (not self.frames and (client_bytes or server_bytes)):
            out.append(
                Other(
                    KIND_NOT_KAFKA,
                    self.id,
                    self.peer,
                    self.server,
                    None,
                    None,
                    0,
                    0,
                    client_bytes,
                    server_bytes,
                    self.first_ns,
                    self.last_ns,
                )
            )
        for (kind, key, version), (requests, responses, sent, received, first, last) in sorted(
            self.others.items(), key=lambda item: (item[0][0], item[0][1] is None, item[0][1] or 0, item[0][2] or 0)
        ):
            out.append(
                Other(
                    kind,
                    self.id,
                    self.peer,
                    self.server,
                    key,
                    version,
                    requests,
                    responses,
                    sent,
                    received,
                    first,
                    last,
                )
            )
        self.others.clear()


class PcapReader:
    """One file's reading; `read_pcap` is `PcapReader(...).items()`."""

    def __init__(self, path: str, kafka_ports: frozenset[int] = DEFAULT_KAFKA_PORTS) -> None:
        self.path = path
        self.kafka_ports = frozenset(kafka_ports)
        self.control = CONTROL_PLANE_KEYS
        self.out: list[PcapExchange | Other | Problem] = []
        self.stats: Counter[str] = Counter()
        #: the most bytes one direction held at once (out of order behind a hole, plus its framing buffer)
        self.peak_held = 0
        self._connections: dict[tuple[bytes, int, bytes, int], _Connection] = {}
        self._closed: OrderedDict[tuple[bytes, int, bytes, int], None] = OrderedDict()
        self._ignored: set[tuple[bytes, int, bytes, int]] = set()
        self._numbered = 0
        self._now = 0

    def note_held(self, held: int) -> None:
        if held > self.peak_held:
            self.peak_held = held

    def items(self) -> Iterator[PcapExchange | Other | Problem]:
        out = self.out
        with open(self.path, "rb", buffering=1 << 20) as f:  # OSError (no such file...) is the caller's
            try:
                yield from self._read(f)
            except (FileRefused, FileTruncated, FileCorrupt) as error:
                ending = {FileRefused: "refused", FileTruncated: "truncated", FileCorrupt: "corrupt"}[type(error)]
                self._close_all("the capture ended before the hole filled")
                out.append(Problem(self._now, None, None, None, f"pcap: the file is {ending}: {error}", None))
            except Exception as error:  # a bug must not take the job down: the rest of the file is lost, said so
                reason = f"pcap: reader error, the rest of the file is not read: {error!r}"
                out.append(Problem(self._now, None, None, None, reason, None))
        self._drops()
        yield from out
        out.clear()

    def _read(self, f: BinaryIO) -> Iterator[PcapExchange | Other | Problem]:
        out = self.out
        stats = self.stats
        connections = self._connections
        ports = self.kafka_ports
        for packet in read_packets(f, LINK_TYPES):
            stats["packets"] += 1
            now = self._now = packet.time_ns
            found = segment(packet.link_type, packet.data, packet.wire_length)
            if isinstance(found, str):
                stats[found] += 1
                continue
            if found.destination_port in ports and found.source_port not in ports:
                key = (found.source, found.source_port, found.destination, found.destination_port)
                from_client = True
            elif found.source_port in ports and found.destination_port not in ports:
                key = (found.destination, found.destination_port, found.source, found.source_port)
                from_client = False
            else:
                stats["not-kafka-port-packets"] += 1
                ignored = (found.source, found.source_port, found.destination, found.destination_port)
                if ignored not in self._ignored and len(self._ignored) < IGNORED_REMEMBERED:
                    self._ignored.add(ignored)
                    stats["not-kafka-port-connections"] += 1
                continue
            conn = connections.get(key)
            if conn is None or (
                from_client and found.flags & (TCP_SYN | TCP_ACK) == TCP_SYN and self._new_syn(conn, found)
            ):
                conn = self._open(key, found, now)
                if conn is None:
                    continue
            conn.last_ns = now
            side, other = (conn.client, conn.server_side) if from_client else (conn.server_side, conn.client)
            if found.flags & TCP_ACK and other.base is not None:
                other.acked(found.ack, now)
            side.segment(found.seq, found.flags, found.payload, found.missing, now)
            if found.flags & TCP_RST:
                self._close(key, conn, now, "the connection was reset before the hole filled")
            elif conn.client.done and conn.server_side.done:
                self._close(key, conn, now, "the connection closed before the hole filled")
            if out:
                yield from out
                out.clear()
        self._close_all("the capture ended before the hole filled")

    @staticmethod
    def _new_syn(conn: _Connection, found: Segment) -> bool:
        """A client SYN on an open connection: a retransmitted SYN, or a new connection reusing the 4-tuple."""
        side = conn.client
        return side.base is not None and side.base != (found.seq + 1) & _MASK

    def _open(self, key: tuple[bytes, int, bytes, int], found: Segment, now: int) -> _Connection | None:
        syn = bool(found.flags & TCP_SYN)
        if not syn and not (found.payload or found.missing):
            return None  # a bare ACK, FIN or RST of a connection not seen (or closed): nothing to read
        if key in self._closed:
            if not syn:
                self.stats["late-packets"] += 1
                return None
            del self._closed[key]
        old = self._connections.get(key)
        if old is not None:
            self._close(key, old, now, "the connection was reused before the hole filled")
        self._numbered += 1
        conn = _Connection(self, self._numbered, _address(key[0], key[1]), _address(key[2], key[3]), now)
        self._connections[key] = conn
        self.stats["connections"] += 1
        return conn

    def _close(self, key: tuple[bytes, int, bytes, int], conn: _Connection, now: int, cause: str) -> None:
        conn.close(now, cause)
        del self._connections[key]
        self._closed[key] = None
        if len(self._closed) > RECENTLY_CLOSED:
            self._closed.popitem(last=False)

    def _close_all(self, cause: str) -> None:
        for key, conn in sorted(self._connections.items(), key=lambda item: item[1].id):
            self._close(key, conn, self._now, cause)

    def _drops(self) -> None:
        """One problem per kind of packet dropped that may have carried Kafka bytes."""
        said = {
            "fragment": "IP fragments dropped (not reassembled; their bytes are holes in their streams)",
            "short": "packets too short for their headers dropped",
            "ipv6-esp": "IPv6 packets encrypted with ESP dropped",
        }
        for kind in DROPS:
            if self.stats[kind] and kind in said:
                self.out.append(Problem(self._now, None, None, None, f"ip: {self.stats[kind]:,} {said[kind]}", None))


def read_pcap(path: str, kafka_ports: frozenset[int] = DEFAULT_KAFKA_PORTS) -> Iterator[PcapExchange | Other | Problem]:
    """Streams the file (pcap or pcapng, detected by magic number; gzip is refused); never raises on bad
    content (a file that is not a pcap at all is one `Problem`). An unreadable path raises `OSError`."""
    return PcapReader(path, kafka_ports).items()

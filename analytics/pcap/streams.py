"""One direction of a TCP connection: reassembled into a byte stream, framed into Kafka requests or responses.

Purpose: `Side` turns one direction's segments, in file order, into whole frames handed to its
connection (connections.py), with the bytes it holds bounded and every loss said as a `Problem`.

Rules:
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
- Resynchronisation scans every byte offset of the unsynchronised bytes as they arrive and syncs
  at the first candidate: a plausible request (frames.py) in the client's stream; in the
  server's, a size in 4..MAX_FRAME followed by the correlation id of a request pending on the
  connection. When the frame after a candidate begins within the bytes at hand, it must be
  plausible too (else the candidate is rejected); nothing else is checked. While no candidate is
  found only the last few bytes (a possible candidate's start) are kept.
- Framing: a request's header is read (size, api key, version, correlation id); a control-plane
  API's frame is kept whole; any other's is counted and its body skipped as it streams by, never
  held. A size above `MAX_FRAME` is a problem and the frame is skipped; a size below a header's
  is a problem and the stream resynchronises. A connection whose first frame (either way) has an
  implausible size (HTTP, SSH, MySQL...) is "not-kafka": counted, never parsed. A TLS record
  header where the first frame should be (after a SYN; any TLS record type mid-stream) makes it
  "tls".
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from .frames import (
    INT32,
    MAX_FRAME,
    MIN_REQUEST,
    MIN_RESPONSE,
    REQUEST_CANDIDATE,
    REQUEST_HEAD,
    REQUEST_PROBE,
    RESPONSE_HEAD,
    RESPONSE_PROBE,
    plausible_request,
    tls_record,
)
from .items import KIND_KAFKA
from .packets import TCP_FIN, TCP_SYN

if TYPE_CHECKING:
    from .connections import Connection

#: Out-of-order bytes held per direction behind a hole before the hole is given up as lost.
MAX_HELD = 4 * 1024 * 1024
SEQ_MASK = 0xFFFFFFFF
_HALF = 1 << 31


class Side:
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

    def __init__(self, conn: Connection, name: str) -> None:
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
        return ((self.base or 0) + self.offset) & SEQ_MASK

    # reassembly

    def segment(self, seq: int, flags: int, payload: bytes, missing: int, now: int) -> None:
        if flags & TCP_SYN:
            seq = (seq + 1) & SEQ_MASK
            if self.base is None:
                self.base, self.synced = seq, True
        if self.base is None:
            self.base, self.mid_stream = seq, True
        position = self.offset + (((seq - self.next_seq() + _HALF) & SEQ_MASK) - _HALF)
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
            acknowledged = self.offset + (((ack - self.next_seq() + _HALF) & SEQ_MASK) - _HALF)
            if acknowledged < self.held[0][0]:
                return
            self.give_up_hole(now, "acknowledged by the peer but not captured: a packet the capture lost")

    # framing

    def deliver(self, data: bytes, now: int) -> None:
        conn = self.conn
        if not self.delivered and self.mid_stream and tls_record(data, mid_stream=True) and not conn.frames:
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
            f"tcp: {missing:,} bytes missing from the {self.name}'s stream at seq {at & SEQ_MASK} ({cause}); "
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
            if not conn.frames and tls_record(buffer[pos : pos + 3], mid_stream=False):
                conn.tls = True
                pos = end
                break
            if available < 12:
                break
            size, key, version, correlation = REQUEST_HEAD.unpack_from(buffer, pos)
            if size < MIN_REQUEST or size > MAX_FRAME:
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
            found = REQUEST_CANDIDATE.search(buffer, pos)
            if found is None:
                keep = max(pos, len(buffer) - (REQUEST_PROBE - 1))
                stats["resync-bytes-skipped"] += keep - pos
                return keep
            start = found.start()
            stats["resync-bytes-skipped"] += start - pos
            verdict = plausible_request(buffer, start)
            if verdict is None:
                return start  # wait for more bytes
            if verdict:
                size = INT32.unpack_from(buffer, start)[0]
                following = plausible_request(buffer, start + 4 + size)  # confirmed by the next one if in view
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
            size, correlation = RESPONSE_HEAD.unpack_from(buffer, pos)
            if size < MIN_RESPONSE or size > MAX_FRAME:
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
            needle = INT32.pack(correlation)
            at = buffer.find(needle, pos + 4)
            while at >= 0 and (best is None or at - 4 < best):
                size = INT32.unpack_from(buffer, at - 4)[0]
                following = at + size
                if MIN_RESPONSE <= size <= MAX_FRAME and (
                    following + 8 > len(buffer)  # the next response is not in view: nothing to confirm with
                    or (
                        MIN_RESPONSE <= INT32.unpack_from(buffer, following)[0] <= MAX_FRAME
                        and INT32.unpack_from(buffer, following + 4)[0] in pending
                    )
                ):
                    best = at - 4
                    break
                at = buffer.find(needle, at + 1)
        stats = self.conn.reader.stats
        if best is None:
            keep = max(pos, len(buffer) - (RESPONSE_PROBE - 1))
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

"""A pcap or pcapng file -> Kafka exchanges, counts of other traffic, and problems, streamed in bounded memory.

Purpose: one pass over the packets in file order, each handed to its connection; `read_pcap` is
the API; `PcapReader` is the same with its counters and its memory high-water mark exposed. The
work is in three modules: streams.py (TCP reassembly and Kafka framing of each direction),
connections.py (pairing responses with requests, what a connection yields) and frames.py (Kafka's
frame layout and the tests of where a frame may start).

Rules:
- Connections: the key is the 4-tuple; the server is the side whose port is a Kafka port; a
  connection where both or neither port is one is ignored (counted in `stats`). A connection is
  created by a SYN or a segment carrying data (bare ACKs, FINs and RSTs of unknown connections
  are ignored), numbered 1, 2, 3... in order of creation, and freed when both sides' FINs have
  been seen (a hole still open then is given up: a retransmission after both FINs is not waited
  for), at an RST, or at the end of the file; its 4-tuple is then remembered
  (`RECENTLY_CLOSED` of them) so that late packets of it are ignored rather than opening a new
  connection, until a new SYN.
- Nothing in the file's content raises: a file that cannot be read is one `Problem`; a
  truncated file gives everything before the cut, then its connections' ends, then a `Problem`.
"""

from __future__ import annotations

import socket
from collections import Counter, OrderedDict
from collections.abc import Iterator
from typing import BinaryIO

from .connections import Connection
from .files import FileCorrupt, FileRefused, FileTruncated, read_packets
from .frames import CONTROL_PLANE_KEYS
from .items import DEFAULT_KAFKA_PORTS, Other, PcapExchange, Problem
from .packets import DROPS, LINK_TYPES, TCP_ACK, TCP_RST, TCP_SYN, Segment, segment
from .streams import SEQ_MASK

#: Closed connections' 4-tuples remembered, so that their late packets do not open new connections.
RECENTLY_CLOSED = 65536
#: Ignored (not Kafka) 4-tuples remembered, to count them once each.
IGNORED_REMEMBERED = 65536


def _address(ip: bytes, port: int) -> str:
    if len(ip) == 4:
        return f"{socket.inet_ntop(socket.AF_INET, ip)}:{port}"
    return f"[{socket.inet_ntop(socket.AF_INET6, ip)}]:{port}"


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
        self._connections: dict[tuple[bytes, int, bytes, int], Connection] = {}
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
    def _new_syn(conn: Connection, found: Segment) -> bool:
        """A client SYN on an open connection: a retransmitted SYN, or a new connection reusing the 4-tuple."""
        side = conn.client
        return side.base is not None and side.base != (found.seq + 1) & SEQ_MASK

    def _open(self, key: tuple[bytes, int, bytes, int], found: Segment, now: int) -> Connection | None:
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
        conn = Connection(self, self._numbered, _address(key[0], key[1]), _address(key[2], key[3]), now)
        self._connections[key] = conn
        self.stats["connections"] += 1
        return conn

    def _close(self, key: tuple[bytes, int, bytes, int], conn: Connection, now: int, cause: str) -> None:
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

"""The pcap reader on crafted captures: link layers, file formats, Kafka framing and pairing, bounds (its
TCP reassembly: test_reassembly.py).

Each case that guards a line of analytics/pcap/ names its module and the line in a comment: without
that line the test fails (checked by hand while writing them).
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import dpkt
import pytest

from analytics.pcap import KIND_KAFKA, KIND_NOT_KAFKA, KIND_TLS, Other, PcapExchange, PcapReader, kafka_api_name
from analytics.pcap import connections as connections_module
from analytics.pcap import frames as frames_module
from analytics.pcap import streams as streams_module
from protocol.capture import INBOUND, Exchange
from protocol.registry import decode_request, decode_response

from .craft import (
    BASE_US,
    Flow,
    Pkt,
    heartbeat,
    heartbeat_response,
    ns,
    other_request,
    other_response,
    write,
    write_pcapng_interfaces,
)
from .reading import conversation, exchange, expected, read

# basics


def test_in_order_conversation_gives_exchanges_that_decode(tmp_path: Path) -> None:
    flow = Flow()
    packets = flow.handshake(BASE_US)
    packets += flow.request(heartbeat(1), BASE_US + 10) + flow.response(heartbeat_response(1), BASE_US + 20)
    packets += flow.request(other_request(0, 9, 2, 5000), BASE_US + 30)  # Produce: 4 segments, counted
    packets += flow.response(other_response(2, 100), BASE_US + 40)
    packets += flow.request(heartbeat(3), BASE_US + 50) + flow.response(heartbeat_response(3), BASE_US + 60)
    packets += flow.close(BASE_US + 70)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert exchanges == [exchange(1, BASE_US + 10, BASE_US + 20), exchange(3, BASE_US + 50, BASE_US + 60)]
    assert others == [
        Other(
            KIND_KAFKA, 1, "10.0.0.1:50000", "10.0.0.2:9093", 0, 9, 1, 1, 5020, 104, ns(BASE_US + 30), ns(BASE_US + 40)
        )
    ]
    assert problems == []
    # the rows are capture rows: the codec decodes them
    assert Exchange(*exchanges[0][:10]).direction == INBOUND
    assert decode_request(exchanges[0].request).correlation_id == 1
    assert decode_response(exchanges[0].response or b"", 63, 1)[1].is_caught_up  # type: ignore[attr-defined]


# link layers and file formats


@pytest.mark.parametrize(
    ("link", "vlans", "fmt"),
    [
        ("ethernet", (), "pcap"),
        ("ethernet", (), "pcapng"),
        ("ethernet", (5,), "pcap"),
        ("ethernet", (5, 1000), "pcap"),
        ("sll", (), "pcap"),
        ("sll2", (), "pcapng"),
        ("raw", (), "pcap"),
    ],
)
@pytest.mark.parametrize("ipv6", [False, True])
def test_link_layers(tmp_path: Path, link: str, vlans: tuple[int, ...], fmt: str, ipv6: bool) -> None:
    peer = "[fd00::1]:50000" if ipv6 else "10.0.0.1:50000"
    path = write(tmp_path / "a.cap", conversation(Flow(ipv6=ipv6), range(1, 4)), link=link, fmt=fmt, vlans=vlans)
    assert read(path) == (expected(range(1, 4), peer=peer), [], [])


def test_ipv6_extension_headers_are_skipped(tmp_path: Path) -> None:
    flow = Flow(ipv6=True)
    packets = []
    for packet in conversation(flow, range(1, 3)):
        ip6 = dpkt.ip6.IP6(packet.ip)
        tcp = bytes(ip6.data)
        options = bytes([dpkt.ip.IP_PROTO_TCP, 0]) + bytes(6)  # a destination options header, 8 bytes of padding
        raw = bytearray(bytes(ip6)[:40] + options + tcp)
        raw[6] = 60  # next header: destination options
        struct.pack_into(">H", raw, 4, len(options) + len(tcp))
        packets.append(Pkt(packet.time_us, bytes(raw)))
    assert read(write(tmp_path / "a.pcap", packets, link="raw")) == (
        expected(range(1, 3), peer="[fd00::1]:50000"),
        [],
        [],
    )


def test_pcapng_with_two_interfaces_of_different_link_types(tmp_path: Path) -> None:
    one = conversation(Flow(client_port=50000), range(1, 3))
    two = [p._replace(interface=1) for p in conversation(Flow(client_port=50001), range(1, 3), BASE_US + 1000)]
    path = write_pcapng_interfaces(tmp_path / "a.pcapng", sorted(one + two), ["ethernet", "sll2"])
    exchanges, others, problems = read(path)
    assert exchanges == expected(range(1, 3)) + expected(
        range(1, 3), BASE_US + 1000, connection=2, peer="10.0.0.1:50001"
    )
    assert (others, problems) == ([], [])


def test_pcapng_nanosecond_timestamps(tmp_path: Path) -> None:
    resolution = dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL, data=b"\x09")
    end = dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT)
    idb = dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=101, snaplen=65535, opts=[resolution, end])
    path = tmp_path / "a.pcapng"
    with open(path, "wb") as f:
        writer = dpkt.pcapng.Writer(f, idb=idb)
        for index, packet in enumerate(conversation(Flow(), range(1, 2))):
            time_ns = ns(packet.time_us) + index  # nanoseconds a float would lose
            writer.writepkt(dpkt.pcapng.EnhancedPacketBlockLE(
                ts_high=time_ns >> 32, ts_low=time_ns & 0xFFFFFFFF, caplen=len(packet.ip), pkt_len=len(packet.ip),
                pkt_data=packet.ip))  # fmt: skip
    [found] = read(path)[0]
    assert (found.request_time_ns, found.response_time_ns) == (ns(BASE_US + 10) + 3, ns(BASE_US + 20) + 4)


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_truncated_file_yields_everything_before_the_cut_and_one_problem(tmp_path: Path, fmt: str) -> None:
    flow = Flow()
    packets = conversation(flow, range(1, 3))[:-2]  # no FINs
    packets += flow.request(heartbeat(3), BASE_US + 300)
    path = write(tmp_path / "a.pcap", packets, fmt=fmt)
    path.write_bytes(path.read_bytes()[:-10])  # tcpdump killed while writing the last packet
    exchanges, others, problems = read(path)
    assert exchanges == expected(range(1, 3))
    assert others == []
    [problem] = problems
    assert problem.connection_id is None
    assert problem.reason.startswith(
        "pcap: the file is truncated: the file ends inside a " + ("packet (" if fmt == "pcap" else "block (")
    )


# connections, framing and pairing


def test_tls_connection_is_counted_once_and_never_parsed(tmp_path: Path) -> None:
    flow = Flow()
    hello = bytes([0x16, 0x03, 0x01, 0x00, 0xC8]) + b"\x01" + bytes(199)
    packets = flow.handshake(BASE_US) + flow.request(hello, BASE_US + 10)
    packets += flow.response(bytes([0x16, 0x03, 0x03, 0x00, 0x40]) + bytes(64), BASE_US + 20)
    packets += flow.request(bytes([0x17, 0x03, 0x03, 0x00, 0x20]) + bytes(32), BASE_US + 30) + flow.close(BASE_US + 40)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert (exchanges, problems) == ([], [])
    assert others == [Other(KIND_TLS, 1, "10.0.0.1:50000", "10.0.0.2:9093", None, None, 0, 0, 242, 69,
                            ns(BASE_US), ns(BASE_US + 41))]  # fmt: skip


def test_a_stream_that_is_not_kafka_is_counted_and_other_ports_are_ignored(tmp_path: Path) -> None:
    flow = Flow()
    packets = flow.handshake(BASE_US) + flow.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", BASE_US + 10)
    packets += flow.response(b"HTTP/1.1 200 OK\r\n\r\n", BASE_US + 20) + flow.close(BASE_US + 30)
    packets += conversation(Flow(server_port=5432), range(1, 3), BASE_US + 100)  # not a Kafka port
    packets += conversation(Flow(client_port=9092, server_port=9093), range(1, 3), BASE_US + 200)  # both are
    reader = PcapReader(str(write(tmp_path / "a.pcap", packets)))
    items = list(reader.items())
    assert items == [Other(KIND_NOT_KAFKA, 1, "10.0.0.1:50000", "10.0.0.2:9093", None, None, 0, 0, 27, 19,
                           ns(BASE_US), ns(BASE_US + 31))]  # fmt: skip
    assert reader.stats["not-kafka-port-connections"] == 4  # two connections, each direction a 4-tuple


def test_requests_without_responses_are_emitted_unanswered(tmp_path: Path) -> None:
    # guards connections.py `respond`'s loop (`self._unanswered(first)`) and `close`'s `while self.pending`: without
    # them a request skipped over (acks=0 style) or pending at the end is never emitted
    flow = Flow()
    packets = flow.handshake(BASE_US)
    packets += flow.request(heartbeat(1), BASE_US + 10)  # never answered
    packets += flow.request(other_request(0, 9, 2, 100), BASE_US + 15)  # Produce acks=0: never answered
    packets += flow.request(heartbeat(3), BASE_US + 20) + flow.response(heartbeat_response(3), BASE_US + 30)
    packets += flow.request(heartbeat(4), BASE_US + 40) + flow.close(BASE_US + 50)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert exchanges == [
        exchange(1, BASE_US + 10, None),
        exchange(3, BASE_US + 20, BASE_US + 30),
        exchange(4, BASE_US + 40, None),
    ]
    assert [(o.api_key, o.requests, o.responses) for o in others] == [(0, 1, 0)]
    assert problems == []


def test_a_frame_in_one_byte_segments_and_many_frames_in_one_segment(tmp_path: Path) -> None:
    flow = Flow()
    packets = flow.handshake(BASE_US)
    packets += flow.request(heartbeat(1), BASE_US + 10, mss=1)
    frame = heartbeat(1)
    packets += flow.response(heartbeat_response(1), BASE_US + 1000, mss=1)
    packets += flow.request(b"".join(heartbeat(c) for c in range(2, 7)), BASE_US + 2000, mss=10_000)
    packets += flow.response(b"".join(heartbeat_response(c) for c in range(2, 7)), BASE_US + 2010, mss=10_000)
    packets += flow.close(BASE_US + 3000)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    response_end = BASE_US + 1000 + len(heartbeat_response(1)) - 1
    assert exchanges == [exchange(1, BASE_US + 10 + len(frame) - 1, response_end)] + [
        exchange(c, BASE_US + 2000, BASE_US + 2010) for c in range(2, 7)
    ]
    assert (others, problems) == ([], [])


def test_a_huge_frame_of_another_api_is_skipped_without_being_held(tmp_path: Path) -> None:
    # guards streams.py `_requests`' branch for APIs not decoded (`conn.request(key, ..., None, ...)`, `_skip_frame`)
    # and `deliver`'s `if self.skip:`: without them the 50 MB body is buffered
    flow = Flow()
    packets = flow.handshake(BASE_US)
    packets += flow.request(other_request(0, 9, 1, 50 * 1024 * 1024), BASE_US + 10, mss=60_000)
    packets += flow.response(other_response(1, 10), BASE_US + 5000)
    packets += conversation(flow, range(2, 4), BASE_US + 6000, handshake=False)
    reader = PcapReader(str(write(tmp_path / "a.pcap", packets)))
    items = list(reader.items())
    assert [item for item in items if isinstance(item, PcapExchange)] == expected(range(2, 4), BASE_US + 6000)
    assert reader.peak_held < 1024  # a frame header at most; the heartbeats arrive whole
    [other] = [item for item in items if isinstance(item, Other)]
    assert (other.api_key, other.request_bytes) == (0, 50 * 1024 * 1024 + 20)


def test_a_frame_over_the_cap_is_a_problem_and_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streams_module, "MAX_FRAME", 1000)  # the cap the framing applies
    monkeypatch.setattr(frames_module, "MAX_FRAME", 1000)  # and the one a resynchronisation candidate fits
    flow = Flow()
    packets = flow.handshake(BASE_US)
    packets += flow.request(heartbeat(1), BASE_US + 10) + flow.response(heartbeat_response(1), BASE_US + 20)
    packets += flow.request(other_request(0, 9, 2, 5000), BASE_US + 30)
    packets += conversation(flow, range(3, 5), BASE_US + 100, handshake=False)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert exchanges == [exchange(1, BASE_US + 10, BASE_US + 20), *expected(range(3, 5), BASE_US + 100)]
    assert others == []  # the skipped frame is not counted: its header may be garbage
    assert [p.reason for p in problems] == ["kafka: a request of 5,020 bytes is over the 1,000-byte cap: skipped"]


def test_the_pending_map_is_bounded(tmp_path: Path) -> None:
    # guards connections.py `while len(self.pending) > MAX_PENDING ...`: without it the map grows with every request
    flow = Flow()
    count = connections_module.MAX_PENDING + 10
    packets = flow.handshake(BASE_US)
    packets += flow.request(b"".join(heartbeat(c) for c in range(count)), BASE_US + 10, mss=60_000)
    packets += flow.response(heartbeat_response(count - 1), BASE_US + 20) + flow.close(BASE_US + 30)
    reader = PcapReader(str(write(tmp_path / "a.pcap", packets)))
    exchanges = [item for item in reader.items() if isinstance(item, PcapExchange)]
    assert [e.correlation_id for e in exchanges] == list(range(count))
    assert [e.response is None for e in exchanges] == [True] * (count - 1) + [False]
    assert reader.stats["pending-evicted"] == 10


def test_a_reused_4_tuple_after_close_is_a_new_connection_and_late_packets_are_ignored(tmp_path: Path) -> None:
    one = conversation(Flow(), range(1, 2))
    late = one[-3]  # a retransmission of the last response, after the FINs
    two = conversation(Flow(client_isn=77, server_isn=88), range(1, 2), BASE_US + 1000)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", [*one, late._replace(time_us=BASE_US + 500), *two]))
    assert exchanges == expected(range(1, 2)) + expected(range(1, 2), BASE_US + 1000, connection=2)
    assert (others, problems) == ([], [])


# files the reader refuses


def test_files_that_are_not_pcap(tmp_path: Path) -> None:
    text = tmp_path / "a.txt"
    text.write_bytes(b"hello, not a capture")
    packed = tmp_path / "a.pcap.gz"
    packed.write_bytes(gzip.compress(write(tmp_path / "a.pcap", conversation(Flow(), range(1, 2))).read_bytes()))
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    wifi = tmp_path / "wifi.pcap"
    with open(wifi, "wb") as f:
        dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_IEEE802_11)
    reasons = [[p.reason for p in read(path)[2]] for path in (text, packed, empty, wifi)]
    assert reasons == [
        ["pcap: the file is refused: not a pcap or pcapng file (magic number 68656c6c)"],
        ["pcap: the file is refused: the file is gzip-compressed: gunzip it first"],
        ["pcap: the file is refused: not a pcap or pcapng file (0 bytes)"],
        ["pcap: the file is refused: link type 105 (IEEE802_11) is not supported"],
    ]


def test_api_names() -> None:
    assert [kafka_api_name(k) for k in (0, 6, 56, 63, 87, 1000, 999)] == [
        "Produce",
        "UpdateMetadata",
        "AlterPartition",
        "BrokerHeartbeat",
        "ReadShareGroupStateSummary",
        "AlterReplicaState",
        "api 999",
    ]


def test_fetch_is_counted_like_produce_never_held_though_the_codec_decodes_it(tmp_path: Path) -> None:
    # guards frames.py `CONTROL_PLANE_KEYS` (the codec's APIs less Fetch): with Fetch kept, a consumer's
    # multi-megabyte Fetch responses would be held whole and decoded into the control-plane tables
    flow = Flow()
    packets = flow.handshake(BASE_US)
    packets += flow.request(other_request(1, 12, 1, 60), BASE_US + 10)
    packets += flow.response(other_response(1, 2_000_000), BASE_US + 20)
    packets += flow.request(heartbeat(2), BASE_US + 3_000) + flow.response(heartbeat_response(2), BASE_US + 3_010)
    packets += flow.close(BASE_US + 4_000)
    reader = PcapReader(str(write(tmp_path / "a.pcap", packets)))
    items = list(reader.items())
    assert [item.correlation_id for item in items if isinstance(item, PcapExchange)] == [2]
    (fetch,) = [item for item in items if isinstance(item, Other)]
    assert (fetch.kind, fetch.api_key, fetch.api_version, fetch.requests, fetch.responses) == ("kafka", 1, 12, 1, 1)
    assert reader.peak_held < 100_000

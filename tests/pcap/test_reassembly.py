"""The pcap reader's TCP reassembly on crafted captures: segments out of order, retransmitted, lost (given
up when acknowledged, at the end, or with too much held behind them), cut by the snap length, a stream
joined mid-way, sequence numbers wrapping at 2^32.

Each case names, in a comment, the module of analytics/pcap/ and the line in it that it guards: without
that line the test fails (checked by hand while writing them).
"""

from __future__ import annotations

import struct
from pathlib import Path

import dpkt
import pytest

from analytics.pcap import KIND_KAFKA, PcapExchange, PcapReader, Problem
from analytics.pcap import streams as streams_module

from .craft import BASE_US, Flow, Pkt, heartbeat, heartbeat_response, ns, other_request, other_response, write
from .reading import conversation, exchange, expected, read


def test_out_of_order_segments_are_held_until_the_gap_fills(tmp_path: Path) -> None:
    # guards streams.py `heapq.heappush(self.held, ...)` and `self._drain(now)`: without them the later
    # segment is delivered first (garbage framing) or never
    flow = Flow()
    packets = flow.handshake(BASE_US)
    first, second, third = flow.request(heartbeat(1), BASE_US + 10, mss=15)
    packets += [first, third, second]  # the request completes with `second`, at BASE_US + 11
    packets += flow.response(heartbeat_response(1), BASE_US + 20) + flow.close(BASE_US + 30)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert exchanges == [exchange(1, BASE_US + 11, BASE_US + 20)]
    assert (others, problems) == ([], [])


def test_exact_and_overlapping_retransmissions_keep_the_first_copy(tmp_path: Path) -> None:
    # guards streams.py `_advance`'s trim (`payload = payload[trim:]` and the `trim >= len(payload)` drop):
    # without it the retransmitted bytes are framed twice
    flow = Flow()
    packets = flow.handshake(BASE_US)
    frame = heartbeat(1) + heartbeat(2)
    seq = flow.seq[True]
    packets += flow.request(frame[:30], BASE_US + 10)
    packets.append(flow.packet(True, seq, 0x18, frame[:30], BASE_US + 11))  # exact retransmission
    # an overlapping one: 20 old bytes, with different content (the first copy wins), then 10 new ones
    packets.append(flow.packet(True, seq + 10, 0x18, b"\xee" * 20 + frame[30:40], BASE_US + 12))
    flow.seq[True] = seq + 40
    packets += flow.request(frame[40:], BASE_US + 13)
    packets += flow.response(heartbeat_response(1) + heartbeat_response(2), BASE_US + 20) + flow.close(BASE_US + 30)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert exchanges == [exchange(1, BASE_US + 13, BASE_US + 20), exchange(2, BASE_US + 13, BASE_US + 20)]
    assert (others, problems) == ([], [])


def test_lost_segment_is_a_problem_with_the_bytes_missing_and_decoding_resumes(tmp_path: Path) -> None:
    # guards reader.py `other.acked(found.ack, now)` (the server acknowledged the lost bytes: the hole is given
    # up there) and streams.py `_resync_request` after it: without the first the requests behind the hole wait
    # for the FIN and their responses match nothing; without the second they are framed from the middle of the
    # broken one
    flow = Flow()
    packets = flow.handshake(BASE_US)
    packets += flow.request(heartbeat(1), BASE_US + 10) + flow.response(heartbeat_response(1), BASE_US + 20)
    broken = flow.request(heartbeat(2), BASE_US + 110, mss=20)
    lost = broken.pop(1)
    packets += broken
    for index, correlation in enumerate((3, 4)):
        packets += flow.request(heartbeat(correlation), BASE_US + 210 + 100 * index)
        packets += flow.response(heartbeat_response(correlation), BASE_US + 220 + 100 * index)
    packets += flow.close(BASE_US + 500)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert len(dpkt.ip.IP(lost.ip).data.data) == 20
    [problem] = problems
    assert problem.missing_bytes == 20 and problem.connection_id == 1
    seq = 1000 + 1 + len(heartbeat(1)) + 20
    assert problem.reason == (
        f"tcp: 20 bytes missing from the client's stream at seq {seq} (acknowledged by the peer but not captured: "
        "a packet the capture lost); decoding resumes at the next plausible frame boundary"
    )
    assert problem.time_ns == ns(BASE_US + 220)  # the server's acknowledgement
    assert exchanges == [
        exchange(1, BASE_US + 10, BASE_US + 20),
        exchange(3, BASE_US + 210, BASE_US + 220),  # delivered at its own arrival time
        exchange(4, BASE_US + 310, BASE_US + 320),
    ]
    assert others == []


def test_a_lost_segment_nobody_acknowledges_is_given_up_at_the_end(tmp_path: Path) -> None:
    # guards streams.py `give_up_hole` in `finish`: without it the frames held behind the hole are dropped silently
    flow = Flow()
    packets = flow.handshake(BASE_US)
    broken = flow.request(heartbeat(1) + heartbeat(2), BASE_US + 10, mss=20)
    del broken[0]
    packets += broken
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert [p.missing_bytes for p in problems] == [20]
    assert "(the capture ended before the hole filled)" in problems[0].reason
    assert exchanges == [exchange(2, BASE_US + 10 + len(broken), None)]
    assert others == []


def test_a_hole_with_too_much_held_behind_it_is_given_up_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # guards streams.py `if self.held_bytes > MAX_HELD: self.give_up_hole(...)`: without it the held bytes grow
    # until the connection ends (no acknowledgement from the server comes here to give the hole up)
    monkeypatch.setattr(streams_module, "MAX_HELD", 100)
    flow = Flow()
    packets = flow.handshake(BASE_US)
    broken = flow.request(heartbeat(1), BASE_US + 10, mss=20)
    del broken[1]
    packets += broken
    for index, correlation in enumerate(range(2, 8)):
        packets += flow.request(heartbeat(correlation), BASE_US + 100 + 100 * index)
    packets += flow.close(BASE_US + 1000)
    reader = PcapReader(str(write(tmp_path / "a.pcap", packets)))
    items = list(reader.items())
    problems = [item for item in items if isinstance(item, Problem)]
    assert [p.missing_bytes for p in problems] == [20]
    held = len(broken[1].ip) - 40 + 3 * len(heartbeat(2))
    assert problems[0].reason.endswith(
        f"({held} bytes held behind it (a lost packet)); decoding resumes at the next plausible frame boundary"
    )
    assert problems[0].time_ns == ns(BASE_US + 300)  # the third heartbeat behind the hole passes 100 bytes
    exchanges = [item for item in items if isinstance(item, PcapExchange)]
    assert exchanges == [exchange(c, BASE_US + 100 * (c - 1), None) for c in range(2, 8)]
    assert reader.peak_held <= 100 + len(heartbeat(1))


def test_responses_whose_requests_wait_behind_a_hole_are_counted_not_a_reason_to_give_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # guards streams.py `_responses`: an unmatched response is counted (kind "kafka", api key None), even as the
    # connection's first frame; it made the whole connection "not-kafka" once
    monkeypatch.setattr(streams_module, "MAX_HELD", 100)
    flow = Flow(acks=False)
    packets = flow.handshake(BASE_US)
    broken = flow.request(heartbeat(1), BASE_US + 10, mss=20)
    del broken[1]
    packets += broken
    for index, correlation in enumerate(range(2, 8)):
        packets += flow.request(heartbeat(correlation), BASE_US + 100 + 100 * index)
        packets += flow.response(heartbeat_response(correlation), BASE_US + 150 + 100 * index)
    packets += flow.close(BASE_US + 1000)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert [p.missing_bytes for p in problems] == [20]
    assert [(e.correlation_id, e.response is not None) for e in exchanges] == [
        (2, False),  # its response came while it was held behind the hole
        (3, False),
        *[(c, True) for c in range(4, 8)],
    ]
    assert [(o.kind, o.api_key, o.responses) for o in others] == [(KIND_KAFKA, None, 2)]


def test_mid_stream_start_resynchronises_requests_and_responses(tmp_path: Path) -> None:
    # guards streams.py `self.base, self.mid_stream = seq, True` (synced stays False) and the two
    # `_resync_*` methods: without them the capture's first bytes (the end of a frame) are read as a size
    flow = Flow()
    flow.handshake(BASE_US)  # not captured
    early_request = flow.request(heartbeat(6) + heartbeat(7), BASE_US + 10)
    early_response = flow.response(heartbeat_response(6) + heartbeat_response(7)[:5], BASE_US + 20, mss=1000)
    tail = flow.response(heartbeat_response(7)[5:], BASE_US + 21)
    seen = [Pkt(p.time_us, p.ip) for p in early_request]
    # the capture starts mid-frame in both directions: 9 bytes into heartbeat 7's request, and in response 7
    ip = dpkt.ip.IP(seen[0].ip)
    data = ip.data.data
    cut = len(heartbeat(6)) + 9
    packets = [flow.packet(True, ip.data.seq + cut, 0x18, data[cut:], BASE_US + 10)]
    packets += tail
    packets += conversation(flow, range(8, 11), BASE_US + 100, handshake=False)
    del early_response
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert exchanges == expected(range(8, 11), BASE_US + 100)
    assert (others, problems) == ([], [])


def test_sequence_numbers_wrap_at_2_32_within_a_frame(tmp_path: Path) -> None:
    # guards streams.py `(((seq - self.next_seq() + _HALF) & SEQ_MASK) - _HALF)`: without the modular distance
    # the segments after the wrap are 2^32 bytes ahead and held forever
    flow = Flow(client_isn=2**32 - 20, server_isn=2**32 - 3)
    packets = flow.handshake(BASE_US)
    first, second, third = flow.request(heartbeat(1), BASE_US + 10, mss=15)  # wraps inside `first`'s successor
    packets += [first, third, second]
    packets += flow.response(heartbeat_response(1), BASE_US + 20, mss=4) + flow.close(BASE_US + 30)
    exchanges, others, problems = read(write(tmp_path / "a.pcap", packets))
    assert exchanges == [exchange(1, BASE_US + 11, BASE_US + 24)]
    assert (others, problems) == ([], [])


def test_snaplen_cut_packets_are_holes(tmp_path: Path) -> None:
    # guards streams.py `self.gap(missing, ...)` in `_advance`: without it the cut bytes vanish unnoticed and
    # the next frame's bytes are read as the rest of the cut one; and `if self.skip >= missing` in `gap`:
    # a cut inside a body that is skipped anyway is not a problem
    flow = Flow()
    packets = flow.handshake(BASE_US)
    packets += flow.request(other_request(0, 9, 1, 3000), BASE_US + 10, mss=3100)  # Produce, one segment
    packets += flow.response(other_response(1, 10), BASE_US + 20)
    packets += flow.request(heartbeat(2), BASE_US + 30) + flow.response(heartbeat_response(2), BASE_US + 40)
    packets += conversation(flow, range(3, 5), BASE_US + 100, handshake=False)
    path = write(tmp_path / "a.pcap", packets)
    # cut the Produce segment and heartbeat 2's to 80 bytes of frame (Ethernet 14 + IP 20 + TCP 20 + 26)
    raw = bytearray(path.read_bytes())
    out, pos = bytearray(raw[:24]), 24
    index = 0
    while pos < len(raw):
        sec, usec, caplen, length = struct.unpack_from("<IIII", raw, pos)
        frame = raw[pos + 16 : pos + 16 + caplen]
        if index in (3, 5):
            frame = frame[:80]
        out += struct.pack("<IIII", sec, usec, len(frame), length) + frame
        pos += 16 + caplen
        index += 1
    path.write_bytes(bytes(out))
    exchanges, others, problems = read(path)
    assert exchanges == expected(range(3, 5), BASE_US + 100)
    [problem] = problems
    assert problem.missing_bytes == len(heartbeat(2)) - 26
    assert "(not captured: the snap length cut the packet)" in problem.reason
    assert [(o.api_key, o.requests, o.responses) for o in others] == [(0, 1, 1), (None, 0, 1)]

"""A large synthetic capture for the pcap reader's throughput and memory figures (not a test).

    .venv/bin/python -m tests.pcap.generate /tmp/big.pcap 1000000

writes that many packets: 200 concurrent connections to port 9093, each a loop of BrokerHeartbeat
requests and responses (control plane: kept), Produce requests of 1-64 KiB in 1448-byte segments
with their responses (skipped), ACKs, 1% of the segments retransmitted and 1% swapped with their
successor (out of order), connections closed and reopened as it goes. Headers are packed with
struct (dpkt's classes are too slow for a million packets); the link type is Ethernet.
"""

from __future__ import annotations

import random
import struct
import sys

from .craft import heartbeat, heartbeat_response, other_request, other_response

_RECORD = struct.Struct("<IIII")
_ETHERNET = b"\x04" * 6 + b"\x02" * 6 + b"\x08\x00"


def _packet(client: int, from_client: bool, seq: int, ack: int, flags: int, data: bytes) -> bytes:
    ip_client = struct.pack(">I", 0x0A000000 + client)
    source, destination = (ip_client, b"\x0a\xff\x00\x01") if from_client else (b"\x0a\xff\x00\x01", ip_client)
    ports = (40000 + client, 9093) if from_client else (9093, 40000 + client)
    tcp = struct.pack(">HHIIBBHHH", *ports, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 0x50, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(data), 0, 0x4000, 64, 6, 0, source, destination)
    return _ETHERNET + ip + tcp + data


def generate(path: str, count: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    seqs: dict[int, list[int]] = {}
    correlation: dict[int, int] = {}
    written = 0
    time_us = 1_700_000_000_000_000
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))

        def emit(frame: bytes) -> None:
            nonlocal written, time_us
            time_us += rng.randint(1, 50)
            f.write(_RECORD.pack(time_us // 1_000_000, time_us % 1_000_000, len(frame), len(frame)) + frame)
            written += 1

        def send(client: int, from_client: bool, data: bytes) -> None:
            mine, theirs = seqs[client][not from_client], seqs[client][from_client]
            segments = [data[i : i + 1448] for i in range(0, len(data), 1448)]
            offsets = [mine + i * 1448 for i in range(len(segments))]
            order = list(range(len(segments)))
            if len(order) > 1 and rng.random() < 0.01:
                k = rng.randrange(len(order) - 1)
                order[k], order[k + 1] = order[k + 1], order[k]
            for i in order:
                emit(_packet(client, from_client, offsets[i], theirs, 0x18, segments[i]))
                if rng.random() < 0.01:
                    emit(_packet(client, from_client, offsets[i], theirs, 0x18, segments[i]))
            seqs[client][not from_client] = mine + len(data)
            emit(_packet(client, not from_client, theirs, seqs[client][not from_client], 0x10, b""))

        def open_(client: int) -> None:
            isn_c, isn_s = rng.getrandbits(32), rng.getrandbits(32)
            emit(_packet(client, True, isn_c, 0, 0x02, b""))
            emit(_packet(client, False, isn_s, isn_c + 1, 0x12, b""))
            seqs[client] = [isn_c + 1, isn_s + 1]  # [client's next seq, server's next seq]
            correlation[client] = 0

        for client in range(200):
            open_(client)
        while written < count:
            client = rng.randrange(200)
            c = correlation[client] = correlation[client] + 1
            if rng.random() < 0.6:
                send(client, True, heartbeat(c))
                send(client, False, heartbeat_response(c))
            else:
                send(client, True, other_request(0, 9, c, rng.randint(1024, 65536)))
                send(client, False, other_response(c, 60))
            if rng.random() < 0.002:
                c_seq, s_seq = seqs[client]
                emit(_packet(client, True, c_seq, s_seq, 0x11, b""))
                emit(_packet(client, False, s_seq, c_seq + 1, 0x11, b""))
                open_(client)


if __name__ == "__main__":
    generate(sys.argv[1], int(sys.argv[2]))

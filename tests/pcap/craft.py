"""Crafted Kafka-over-TCP captures for the pcap reader's tests, with dpkt's packet classes and writers.

Frames come from fencer's codec (so their payloads decode); a `Flow` is one TCP connection whose
packets are built at the IP layer and wrapped in a link layer when written; `write` writes pcap or
pcapng with dpkt's writers. Timestamps are integer microseconds (dpkt's writers take float seconds,
exact at microsecond resolution for the values used here); the reader gives nanoseconds.
"""

from __future__ import annotations

import io
import socket
import struct
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import dpkt

from protocol.ids import BrokerEpoch, BrokerId
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.registry import encode_request, encode_response

CLIENT_IP, SERVER_IP = "10.0.0.1", "10.0.0.2"
CLIENT_IP6, SERVER_IP6 = "fd00::1", "fd00::2"
KAFKA_PORT = 9093
BASE_US = 1_700_000_000_000_000  # 2023-11-14, in microseconds

FIN, SYN, RST, PSH, ACK = dpkt.tcp.TH_FIN, dpkt.tcp.TH_SYN, dpkt.tcp.TH_RST, dpkt.tcp.TH_PUSH, dpkt.tcp.TH_ACK


def heartbeat(correlation_id: int, broker: int = 1) -> bytes:
    """A BrokerHeartbeat v1 request frame (control plane), size prefix included."""
    return encode_request(
        BrokerHeartbeatRequest(broker_id=BrokerId(broker), broker_epoch=BrokerEpoch(7)), 1, correlation_id
    )


def heartbeat_response(correlation_id: int) -> bytes:
    return encode_response(BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False), 1, correlation_id)


def other_request(
    api_key: int, version: int, correlation_id: int, body: int, client_id: bytes = b"producer-1"
) -> bytes:
    """A request of an API fencer does not decode (Produce is 0): a v1 header and `body` zero bytes."""
    payload = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + bytes(body)
    return struct.pack(">i", len(payload)) + payload


def other_response(correlation_id: int, body: int) -> bytes:
    return struct.pack(">ii", 4 + body, correlation_id) + bytes(body)


def payload(frame: bytes) -> bytes:
    """A frame's payload as the capture format holds it (no size prefix)."""
    return frame[4:]


class Pkt(NamedTuple):
    time_us: int
    ip: bytes  # an IPv4 or IPv6 packet
    interface: int = 0


class Flow:
    """One TCP connection between a client and a Kafka server; every method returns packets to write."""

    def __init__(
        self,
        client_port: int = 50000,
        server_port: int = KAFKA_PORT,
        client_isn: int = 1000,
        server_isn: int = 500_000,
        ipv6: bool = False,
        acks: bool = True,
    ) -> None:
        self.ipv6 = ipv6
        self.acks = acks  # False: every acknowledgement number is 0 (says nothing)
        family = socket.AF_INET6 if ipv6 else socket.AF_INET
        self.client = socket.inet_pton(family, CLIENT_IP6 if ipv6 else CLIENT_IP), client_port
        self.server = socket.inet_pton(family, SERVER_IP6 if ipv6 else SERVER_IP), server_port
        self.seq = {True: client_isn, False: server_isn}  # next sequence number, by "from the client"

    def packet(self, from_client: bool, seq: int, flags: int, data: bytes, time_us: int) -> Pkt:
        (src, sport), (dst, dport) = (self.client, self.server) if from_client else (self.server, self.client)
        ack = self.seq[not from_client] & 0xFFFFFFFF if self.acks else 0  # everything the other side sent so far
        tcp = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq & 0xFFFFFFFF, ack=ack, flags=flags, win=65535, data=data)
        if self.ipv6:
            ip6 = dpkt.ip6.IP6(src=src, dst=dst, nxt=dpkt.ip.IP_PROTO_TCP, hlim=64, data=tcp)
            ip6.plen = len(tcp)
            return Pkt(time_us, bytes(ip6))
        ip = dpkt.ip.IP(src=src, dst=dst, p=dpkt.ip.IP_PROTO_TCP, ttl=64, df=1, data=tcp)
        return Pkt(time_us, bytes(ip))

    def handshake(self, time_us: int) -> list[Pkt]:
        packets = [
            self.packet(True, self.seq[True], SYN, b"", time_us),
            self.packet(False, self.seq[False], SYN | ACK, b"", time_us + 1),
            self.packet(True, self.seq[True] + 1, ACK, b"", time_us + 2),
        ]
        self.seq[True] += 1
        self.seq[False] += 1
        return packets

    def send(self, from_client: bool, data: bytes, time_us: int, mss: int = 1448, flags: int = PSH | ACK) -> list[Pkt]:
        """`data` in segments of at most `mss` bytes, in order, all at `time_us` + their index."""
        packets = []
        for index, start in enumerate(range(0, len(data), mss)):
            chunk = data[start : start + mss]
            packets.append(self.packet(from_client, self.seq[from_client], flags, chunk, time_us + index))
            self.seq[from_client] += len(chunk)
        return packets

    def request(self, data: bytes, time_us: int, mss: int = 1448) -> list[Pkt]:
        return self.send(True, data, time_us, mss)

    def response(self, data: bytes, time_us: int, mss: int = 1448) -> list[Pkt]:
        return self.send(False, data, time_us, mss)

    def close(self, time_us: int) -> list[Pkt]:
        packets = [
            self.packet(True, self.seq[True], FIN | ACK, b"", time_us),
            self.packet(False, self.seq[False], FIN | ACK, b"", time_us + 1),
        ]
        self.seq[True] += 1
        self.seq[False] += 1
        return packets


# link layers: IP packet -> frame


def ethernet(ip: bytes, vlans: Sequence[int] = ()) -> bytes:
    ip_class = dpkt.ip6.IP6 if ip[0] >> 4 == 6 else dpkt.ip.IP
    frame = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, data=ip_class(ip))
    if vlans:
        frame.vlan_tags = [dpkt.ethernet.VLANtag8021Q(id=vlan) for vlan in vlans]
    return bytes(frame)


def sll(ip: bytes) -> bytes:
    kind = dpkt.ethernet.ETH_TYPE_IP6 if ip[0] >> 4 == 6 else dpkt.ethernet.ETH_TYPE_IP
    return bytes(dpkt.sll.SLL(type=0, ethtype=kind, hdr=b"\x02" * 6)) + ip


def sll2(ip: bytes) -> bytes:
    kind = dpkt.ethernet.ETH_TYPE_IP6 if ip[0] >> 4 == 6 else dpkt.ethernet.ETH_TYPE_IP
    return bytes(dpkt.sll2.SLL2(ethtype=kind, intindex=1, type=0, hdr=b"\x02" * 6)) + ip


def raw(ip: bytes) -> bytes:
    return ip


LINKS: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "ethernet": (dpkt.pcap.DLT_EN10MB, ethernet),
    "sll": (113, sll),
    "sll2": (276, sll2),
    "raw": (101, raw),
}


def write(
    path: Path,
    packets: Iterable[Pkt],
    link: str = "ethernet",
    fmt: str = "pcap",
    vlans: Sequence[int] = (),
    snaplen: int = 65535,
) -> Path:
    """Write the packets (in the given order) as pcap or pcapng with one interface of `link`."""
    link_type, wrap = LINKS[link]
    with open(path, "wb") as f:
        writer = (dpkt.pcap.Writer if fmt == "pcap" else dpkt.pcapng.Writer)(f, snaplen=snaplen, linktype=link_type)
        for packet in packets:
            frame = ethernet(packet.ip, vlans) if link == "ethernet" else wrap(packet.ip)
            writer.writepkt(frame, ts=packet.time_us / 1e6)
    return path


def write_pcapng_interfaces(path: Path, packets: Iterable[Pkt], links: Sequence[str]) -> Path:
    """pcapng with one interface per link in `links`; each packet goes out on its `interface`."""
    idbs = [dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=LINKS[link][0], snaplen=65535) for link in links]
    buffer = io.BytesIO()
    writer = dpkt.pcapng.Writer(buffer, idb=idbs)
    for packet in packets:
        frame = LINKS[links[packet.interface]][1](packet.ip)
        time_us = packet.time_us
        block = dpkt.pcapng.EnhancedPacketBlockLE(
            iface_id=packet.interface,
            ts_high=time_us >> 32,
            ts_low=time_us & 0xFFFFFFFF,
            caplen=len(frame),
            pkt_len=len(frame),
            pkt_data=frame,
        )
        writer.writepkt(block)
    path.write_bytes(buffer.getvalue())
    return path


def ns(time_us: int) -> int:
    return time_us * 1000

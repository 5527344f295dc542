"""A captured frame -> its TCP segment (addresses, ports, sequence number, flags, payload), or why not.

Purpose: the link, network and transport headers, parsed with `struct` at fixed offsets (a
million packets go through here; building dpkt's packet objects costs several times more).

Rules:
- Link types: Ethernet (1) with any stack of 802.1Q / 802.1ad / QinQ tags, Linux cooked SLL (113)
  and SLL2 (276), raw IP (101, 12, 14, 228, 229), BSD null / loopback (0, 108). `LINK_TYPES` is the
  list; the reader refuses a file with any other.
- IPv4 with options; IPv6 with its extension headers skipped (hop-by-hop, routing, destination
  options, AH): the segment is kept. IPv6 ESP (encrypted) and "no next header" drop the packet.
- IP fragments (IPv4 MF or a fragment offset, IPv6 fragment header) are dropped and counted,
  never reassembled: TCP over a path MTU does not fragment in practice (DF is set), and a
  dropped fragment's bytes become a gap in their stream, reported there.
- The payload's length is the IP length's, not the frame's (Ethernet pads short frames); a frame
  cut by the snap length gives what was captured and `missing`, the bytes not captured. An IP
  length of 0 (segmentation offload: the kernel hands tcpdump one large unsplit segment) means
  "as captured".
- Every packet that gives no segment says why in one word (`DROPS`), counted by the caller.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

LINK_ETHERNET = 1
LINK_SLL = 113
LINK_SLL2 = 276
LINK_RAW = frozenset({101, 12, 14})
LINK_IPV4 = 228
LINK_IPV6 = 229
LINK_NULL = 0
LINK_LOOP = 108
LINK_TYPES = frozenset({LINK_ETHERNET, LINK_SLL, LINK_SLL2, LINK_IPV4, LINK_IPV6, LINK_NULL, LINK_LOOP} | LINK_RAW)

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
_VLAN_TAGS = frozenset({0x8100, 0x88A8, 0x9100})
_NULL_IPV6 = frozenset({24, 28, 30})  # BSD AF_INET6 values (NetBSD/OpenBSD, FreeBSD, Darwin)

TCP_FIN = 0x01
TCP_SYN = 0x02
TCP_RST = 0x04
TCP_ACK = 0x10

_IPV6_SKIPPABLE = frozenset({0, 43, 60})  # hop-by-hop, routing, destination options: (len + 1) * 8 bytes
_IPV6_AH = 51  # (len + 2) * 4 bytes
_IPV6_FRAGMENT = 44
_TCP = 6

_U16 = struct.Struct(">H")
_TCP_HEAD = struct.Struct(">HHIIBB")  # ports, seq, ack, data offset, flags

#: Why a packet gave no segment (the keys of the reader's drop counts).
DROPS = ("not-ip", "not-tcp", "fragment", "short", "ipv6-esp")


class Segment(NamedTuple):
    source: bytes  # 4 or 16 bytes
    destination: bytes
    source_port: int
    destination_port: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int  # payload bytes the capture did not keep (snap length)


def segment(link_type: int, data: bytes, wire_length: int) -> Segment | str:
    """The TCP segment in a captured frame, or the reason (one of `DROPS`) there is none."""
    cut = wire_length - len(data)  # bytes of the frame not captured (0 unless snaplen)
    if link_type in (LINK_ETHERNET, LINK_SLL):  # the ethertype ends the header, VLAN tags may follow
        header = 14 if link_type == LINK_ETHERNET else 16
        if len(data) < header:
            return "short"
        kind, offset = _U16.unpack_from(data, header - 2)[0], header
        while kind in _VLAN_TAGS:
            if len(data) < offset + 4:
                return "short"
            kind = _U16.unpack_from(data, offset + 2)[0]
            offset += 4
    elif link_type == LINK_SLL2:
        if len(data) < 20:
            return "short"
        kind, offset = _U16.unpack_from(data, 0)[0], 20
    elif link_type in (LINK_NULL, LINK_LOOP):
        if len(data) < 4:
            return "short"
        family = data[0] or data[3]  # host byte order for null, network order for loop: small values
        kind = ETHERTYPE_IPV4 if family == 2 else ETHERTYPE_IPV6 if family in _NULL_IPV6 else 0
        offset = 4
    else:  # raw IP (the caller admits only LINK_TYPES)
        if not data:
            return "short"
        version = data[0] >> 4
        kind = ETHERTYPE_IPV4 if version == 4 else ETHERTYPE_IPV6 if version == 6 else 0
        offset = 0
    if kind == ETHERTYPE_IPV4:
        return _ipv4(data, offset, cut)
    if kind == ETHERTYPE_IPV6:
        return _ipv6(data, offset, cut)
    return "not-ip"


def _ipv4(data: bytes, offset: int, cut: int) -> Segment | str:
    if len(data) < offset + 20:
        return "short"
    header = (data[offset] & 0x0F) * 4
    total = _U16.unpack_from(data, offset + 2)[0]
    fragment = _U16.unpack_from(data, offset + 6)[0]
    if fragment & 0x3FFF:  # MF or an offset (DF, 0x4000, is fine)
        return "fragment"
    if data[offset + 9] != _TCP:
        return "not-tcp"
    source, destination = data[offset + 12 : offset + 16], data[offset + 16 : offset + 20]
    end = offset + total if total else len(data) + cut
    return _tcp(data, offset + header, end, source, destination)


def _ipv6(data: bytes, offset: int, cut: int) -> Segment | str:
    if len(data) < offset + 40:
        return "short"
    length = _U16.unpack_from(data, offset + 4)[0]
    following = data[offset + 6]
    source, destination = data[offset + 8 : offset + 24], data[offset + 24 : offset + 40]
    end = offset + 40 + length if length else len(data) + cut
    position = offset + 40
    for _ in range(8):  # a chain longer than this is not a real packet
        if following == _TCP:
            return _tcp(data, position, end, source, destination)
        if following == _IPV6_FRAGMENT:
            return "fragment"
        if len(data) < position + 2:
            return "short"
        if following in _IPV6_SKIPPABLE:
            following, position = data[position], position + (data[position + 1] + 1) * 8
        elif following == _IPV6_AH:
            following, position = data[position], position + (data[position + 1] + 2) * 4
        elif following == 50:
            return "ipv6-esp"
        else:
            return "not-tcp"
    return "not-tcp"


def _tcp(data: bytes, offset: int, end: int, source: bytes, destination: bytes) -> Segment | str:
    if len(data) < offset + 20:
        return "short"
    source_port, destination_port, seq, ack, data_offset, flags = _TCP_HEAD.unpack_from(data, offset)
    start = offset + (data_offset >> 4) * 4
    if start > len(data):
        return "short"
    payload = data[start:end]
    missing = max(0, end - max(start, len(data)))
    return Segment(source, destination, source_port, destination_port, seq, ack, flags, payload, missing)

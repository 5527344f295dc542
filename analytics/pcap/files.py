"""pcap and pcapng files -> captured packets (time, link type, bytes, length on the wire), streamed.

Purpose: the file formats, and nothing above them. `dpkt` reads the file header, the pcapng
section and interface blocks and their options (link type, timestamp resolution and offset);
the per-packet record headers, read a million times, are unpacked here with `struct` in the same
byte order (dpkt's own readers keep the first interface's link type only, give float timestamps
that lose nanoseconds, and raise or return short data on a truncated file).

Rules:
- The format is detected by the magic number: pcap (micro- or nanosecond, either byte order,
  the "modified" variant) or pcapng (any number of sections and interfaces, each interface with
  its own link type and timestamp resolution). gzip and anything else is refused (`FileRefused`).
- Timestamps are integer nanoseconds since the epoch, computed without floats.
- Streaming: one record is read at a time; nothing is kept but the interfaces of the current
  section. A record cut by the end of the file (a capture killed mid-write) ends the stream with
  `FileTruncated` after every complete record before it; a record whose length is impossible
  ends it with `FileCorrupt`.
- Link types are not checked here: the caller refuses the ones it cannot read (`SUPPORTED` is
  its list, so pcapng interfaces are checked when declared, before their packets).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from dpkt import pcap, pcapng


class FileRefused(Exception):
    """The file is not one this reader can read at all (not pcap, gzip, an unsupported link type)."""


class FileTruncated(Exception):
    """The file ends inside a record."""


class FileCorrupt(Exception):
    """A record's length is impossible: the rest of the file cannot be framed."""


class Packet(NamedTuple):
    time_ns: int
    link_type: int
    data: bytes  # the captured bytes (caplen)
    wire_length: int  # the packet's length on the wire (len); more than len(data) if snaplen cut it


#: Bigger blocks or records than this are corruption (pcapng's and libpcap's own sanity limit is 256 KiB
#: for packets; blocks with options get some room).
MAX_RECORD = 16 * 1024 * 1024

_PCAP_MAGICS = {
    # magic as read big-endian -> (byte order, nanoseconds, extra bytes per record header)
    pcap.TCPDUMP_MAGIC: (">", False, 0),
    pcap.TCPDUMP_MAGIC_NANO: (">", True, 0),
    pcap.MODPCAP_MAGIC: (">", False, 8),
    pcap.PMUDPCT_MAGIC: ("<", False, 0),
    pcap.PMUDPCT_MAGIC_NANO: ("<", True, 0),
    pcap.PACPDOM_MAGIC: ("<", False, 8),
}
_PCAPNG_MAGIC = pcapng.PCAPNG_BT_SHB
_GZIP = b"\x1f\x8b"


def is_packet_file(head: bytes) -> bool:
    """Whether a file's first four bytes are a pcap (any variant read here) or pcapng magic number."""
    return len(head) == 4 and (
        struct.unpack(">I", head)[0] in _PCAP_MAGICS or struct.unpack(">I", head)[0] == _PCAPNG_MAGIC
    )


def read_packets(f: BinaryIO, supported: frozenset[int]) -> Iterator[Packet]:
    """The file's packets in file order; raises `FileRefused`, `FileTruncated` or `FileCorrupt` (see Rules)."""
    head = f.read(4)
    if head[:2] == _GZIP:
        raise FileRefused("the file is gzip-compressed: gunzip it first")
    if len(head) < 4:
        raise FileRefused(f"not a pcap or pcapng file ({len(head)} bytes)")
    magic = struct.unpack(">I", head)[0]
    if magic in _PCAP_MAGICS:
        yield from _pcap(f, head, magic, supported)
    elif magic == _PCAPNG_MAGIC:
        yield from _pcapng(f, head, supported)
    else:
        raise FileRefused(f"not a pcap or pcapng file (magic number {head.hex()})")


def link_type_refused(link_type: int) -> FileRefused:
    return FileRefused(f"link type {link_type} ({_link_name(link_type)}) is not supported")


def _link_name(link_type: int) -> str:
    names = {
        value: name.removeprefix("DLT_")
        for name, value in vars(pcap).items()
        if name.startswith("DLT_") and isinstance(value, int)
    }
    return str(names.get(link_type, "unknown"))


def _pcap(f: BinaryIO, head: bytes, magic: int, supported: frozenset[int]) -> Iterator[Packet]:
    order, nano, extra = _PCAP_MAGICS[magic]
    rest = f.read(pcap.FileHdr.__hdr_len__ - 4)
    if len(rest) < pcap.FileHdr.__hdr_len__ - 4:
        raise FileTruncated("the file ends inside its header")
    header = (pcap.LEFileHdr if order == "<" else pcap.FileHdr)(head + rest)
    link_type = header.linktype & 0x0FFFFFFF  # the upper bits are FCS flags (pcap-linktype(7))
    if link_type not in supported:
        raise link_type_refused(link_type)
    record = struct.Struct(order + "IIII")
    size = record.size + extra
    scale = 1 if nano else 1000
    read = f.read
    while True:
        raw = read(size)
        if not raw:
            return
        if len(raw) < size:
            raise FileTruncated(f"the file ends inside a record header ({len(raw)} of {size} bytes)")
        seconds, fraction, caplen, length = record.unpack_from(raw)
        if caplen > MAX_RECORD:
            raise FileCorrupt(f"a record claims {caplen:,} captured bytes")
        data = read(caplen)
        if len(data) < caplen:
            raise FileTruncated(f"the file ends inside a packet ({len(data)} of {caplen} bytes)")
        yield Packet(seconds * 1_000_000_000 + fraction * scale, link_type, data, max(length, caplen))


class _Interface(NamedTuple):
    link_type: int
    multiplier: int  # ns = units * multiplier // divisor + offset
    divisor: int
    offset_ns: int


_SHB_FIXED = pcapng.SectionHeaderBlock.__hdr_len__


def _pcapng(f: BinaryIO, head: bytes, supported: frozenset[int]) -> Iterator[Packet]:
    read = f.read
    le, interfaces = _section(f, head, supported)
    order = "<" if le else ">"
    block_head = struct.Struct(order + "II")
    epb = struct.Struct(order + "IIIII")  # interface, ts high, ts low, caplen, len
    pb = struct.Struct(order + "HHIIII")  # interface, drops, ts high, ts low, caplen, len
    spb = struct.Struct(order + "I")
    last_ns = 0
    while True:
        raw = read(8)
        if not raw:
            return
        if len(raw) < 8:
            raise FileTruncated(f"the file ends inside a block header ({len(raw)} of 8 bytes)")
        if raw[:4] == head:  # a new section: its own byte order and interfaces
            le, interfaces = _section(f, raw[:4], supported, raw[4:])
            order = "<" if le else ">"
            block_head, epb = struct.Struct(order + "II"), struct.Struct(order + "IIIII")
            pb, spb = struct.Struct(order + "HHIIII"), struct.Struct(order + "I")
            continue
        kind, length = block_head.unpack(raw)
        if length < 12 or length % 4 or length > MAX_RECORD:
            raise FileCorrupt(f"a block of type {kind:#x} claims {length:,} bytes")
        body = read(length - 8)
        if len(body) < length - 8:
            raise FileTruncated(f"the file ends inside a block ({len(body) + 8} of {length} bytes)")
        if kind == pcapng.PCAPNG_BT_EPB or kind == pcapng.PCAPNG_BT_PB:
            if kind == pcapng.PCAPNG_BT_EPB:
                index, high, low, caplen, wire = epb.unpack_from(body)
                start = epb.size
            else:
                index, _drops, high, low, caplen, wire = pb.unpack_from(body)
                start = pb.size
            if index >= len(interfaces) or start + caplen > len(body) - 4:
                raise FileCorrupt(f"a packet block names interface {index} or claims {caplen:,} bytes")
            face = interfaces[index]
            last_ns = ((high << 32) | low) * face.multiplier // face.divisor + face.offset_ns
            yield Packet(last_ns, face.link_type, body[start : start + caplen], max(wire, caplen))
        elif kind == pcapng.PCAPNG_BT_SPB:  # no timestamp: the previous packet's
            if not interfaces:
                raise FileCorrupt("a simple packet block before any interface")
            wire = spb.unpack_from(body)[0]
            caplen = min(wire, len(body) - 8)
            yield Packet(last_ns, interfaces[0].link_type, body[4 : 4 + caplen], max(wire, caplen))
        elif kind == pcapng.PCAPNG_BT_IDB:
            interfaces.append(_interface(raw + body, le, supported))
        # every other block (name resolution, statistics, custom...) carries no packet


def _section(f: BinaryIO, head: bytes, supported: frozenset[int], more: bytes = b"") -> tuple[bool, list[_Interface]]:
    raw = head + more
    raw += f.read(_SHB_FIXED - len(raw))
    if len(raw) < _SHB_FIXED:
        raise FileTruncated("the file ends inside a section header")
    bom = struct.unpack_from(">I", raw, 8)[0]
    if bom == pcapng.BYTE_ORDER_MAGIC_LE:
        le = True
    elif bom == pcapng.BYTE_ORDER_MAGIC:
        le = False
    else:
        raise FileRefused("a pcapng section header with no byte-order magic")
    length = struct.unpack_from("<I" if le else ">I", raw, 4)[0]
    if length < _SHB_FIXED or length % 4 or length > MAX_RECORD:
        raise FileCorrupt(f"a section header claims {length:,} bytes")
    raw += f.read(length - len(raw))
    if len(raw) < length:
        raise FileTruncated("the file ends inside a section header")
    section = (pcapng.SectionHeaderBlockLE if le else pcapng.SectionHeaderBlock)(raw)
    if section.v_major != pcapng.PCAPNG_VERSION_MAJOR:
        raise FileRefused(f"pcapng version {section.v_major}.{section.v_minor} is not supported")
    return le, []


def _interface(raw: bytes, le: bool, supported: frozenset[int]) -> _Interface:
    block = (pcapng.InterfaceDescriptionBlockLE if le else pcapng.InterfaceDescriptionBlock)(raw)
    if block.linktype not in supported:
        raise link_type_refused(block.linktype)
    multiplier, divisor, offset = 1000, 1, 0  # microseconds by default
    for option in block.opts:
        if option.code == pcapng.PCAPNG_OPT_IF_TSRESOL and option.data:
            value = option.data[0]
            base, exponent = (2, value & 0x7F) if value & 0x80 else (10, value)
            multiplier, divisor = 1_000_000_000, base**exponent
            if base == 10 and exponent <= 9:
                multiplier, divisor = 10 ** (9 - exponent), 1
        elif option.code == pcapng.PCAPNG_OPT_IF_TSOFFSET and len(option.data) >= 8:
            offset = struct.unpack_from("<q" if le else ">q", option.data)[0] * 1_000_000_000
    return _Interface(block.linktype, multiplier, divisor, offset)

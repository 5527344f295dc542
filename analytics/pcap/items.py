"""What the pcap reader yields: exchanges, counts of traffic it does not decode, and problems.

Purpose: the three record types of `read_pcap`'s stream, shared by the reader and the Spark side
that turns them into rows (capture rows, `other_traffic` rows, `decode_errors` rows).

Rules:
- `PcapExchange` starts with the fields of `protocol.capture.Exchange`, in its order and with its
  meaning (`PcapExchange[:10]` is an `Exchange`), then adds `server`.
- Addresses are "ip:port", "[v6 address]:port" for IPv6; `peer` is the client, `server` the side
  whose port is a Kafka port.
- Times are nanoseconds since the epoch, from the packets' timestamps.
"""

from __future__ import annotations

from typing import NamedTuple

DEFAULT_KAFKA_PORTS = frozenset({9092, 9093})

#: `Other.kind` values.
KIND_KAFKA = "kafka"  # frames of an API that is not control plane (api_key None: responses to requests not seen)
KIND_TLS = "tls"  # an encrypted connection: bytes counted, never parsed
KIND_NOT_KAFKA = "not-kafka"  # a connection on a Kafka port whose streams never framed as Kafka


class PcapExchange(NamedTuple):
    """One request and its response, as `protocol.capture.Exchange`, plus the server's address."""

    request_time_ns: int  # the timestamp of the packet that completed the request frame
    response_time_ns: int | None  # likewise for the response; None without one
    direction: str  # always protocol.capture.INBOUND: the server received the request
    connection_id: int  # 1, 2, 3... in the order connections first appear in the file
    peer: str  # the client's "ip:port"
    api_key: int
    api_version: int
    correlation_id: int
    request: bytes  # the frame payload, without the 4-byte size prefix
    response: bytes | None  # likewise; None if the connection or the capture ended without one
    server: str  # the server's "ip:port"


class Other(NamedTuple):
    """Traffic counted, not decoded: one per (connection, kind, api key, api version), when the connection ends."""

    kind: str  # KIND_KAFKA | KIND_TLS | KIND_NOT_KAFKA
    connection_id: int
    peer: str
    server: str
    api_key: int | None  # None for tls and not-kafka, and for responses whose request was not seen
    api_version: int | None
    requests: int
    responses: int
    request_bytes: int  # frame payload bytes (kafka) or stream bytes (tls, not-kafka), client to server
    response_bytes: int
    first_ns: int
    last_ns: int


class Problem(NamedTuple):
    """Something the reader could not read, one line; a `decode_errors` row."""

    time_ns: int  # the packet at which it was found (0 if no packet was read)
    connection_id: int | None  # None for the file's own problems
    peer: str | None
    server: str | None
    reason: str
    missing_bytes: int | None  # the bytes of a stream lost to a hole, when that is the problem

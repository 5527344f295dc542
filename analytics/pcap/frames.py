"""Kafka frames on the wire: header layouts, the size cap, the APIs kept whole, where a frame may start.

Purpose: the byte-level facts about Kafka's framing that a stream's framing and resynchronisation
(streams.py) apply, apart from the TCP bookkeeping around them.

Rules:
- A frame is a 4-byte size and that many bytes; a request's header is the api key, version and
  correlation id (then, header v1+, a client id), a response's the correlation id. A size above
  `MAX_FRAME` is over the cap.
- The APIs decoded (`CONTROL_PLANE_KEYS`: every API the codec decodes but Fetch) have their frames
  kept whole; any other's are counted and skipped.
- A request candidate for resynchronisation (`plausible_request`) is a size in 10..MAX_FRAME, an
  api key 0..MAX_KAFKA_API_KEY or 1000, a version 0..MAX_RESYNC_VERSION, a correlation id >= 0,
  then a client id (header v1+) of 1..255 printable ASCII bytes that fits in the frame; a regular
  expression (`REQUEST_CANDIDATE`) prefilters, so that a scan runs at C speed. A request with a v0
  header (ControlledShutdown v0 only) or an empty client id is never a candidate.
- A TLS record header (`tls_record`): 0x16 0x03 0x00-0x04 at a stream's start; mid-stream any TLS
  record type, which no Kafka size under the cap can start with.
"""

from __future__ import annotations

import re
import struct

from protocol.api_keys import ApiKey
from protocol.registry import api_keys

from .kafka_apis import MAX_KAFKA_API_KEY

#: The largest frame read (Kafka's socket.request.max.bytes default); bigger ones are problems, skipped.
MAX_FRAME = 100 * 1024 * 1024
#: The highest request api version a resynchronisation accepts (Kafka 3.9's highest is Fetch's 17).
MAX_RESYNC_VERSION = 20
#: fencer's own API key (AlterReplicaState), besides Kafka's.
FENCER_API_KEY = 1000

REQUEST_HEAD = struct.Struct(">ihhi")  # size, api key, api version, correlation id
RESPONSE_HEAD = struct.Struct(">ii")  # size, correlation id
INT32 = struct.Struct(">i")
_CLIENT_ID_LENGTH = struct.Struct(">h")
MIN_REQUEST = 8  # api key, version, correlation id
MIN_RESPONSE = 4  # correlation id
REQUEST_PROBE = 14  # size, key, version, correlation id, client id length
RESPONSE_PROBE = 8


#: The APIs whose frames are kept whole and decoded: the codec's (`protocol.registry.api_keys()`) but
#: Fetch, which is data plane on a broker's port (consumers' and followers' records, responses of up to
#: `MAX_FRAME`): it is counted like Produce. KRaft's own Fetch of `__cluster_metadata` between
#: controllers is counted with it until the quorum makes those exchanges part of the tables.
CONTROL_PLANE_KEYS = frozenset(api_keys()) - {int(ApiKey.FETCH)}


def _byte_range(low: int, high: int) -> bytes:
    return b"[" + re.escape(bytes([low])) + b"-" + re.escape(bytes([high])) + b"]"


#: Where a request may start: the size's top byte (MAX_FRAME < 2^27), the api key, the version and the
#: client id length (1..255); the rest is checked in Python (`plausible_request`).
REQUEST_CANDIDATE = re.compile(
    b"(?=" + _byte_range(0, MAX_FRAME >> 24) + b"..."
    b"(?:\x00" + _byte_range(0, MAX_KAFKA_API_KEY) + b"|" + re.escape(struct.pack(">h", FENCER_API_KEY)) + b")"
    b"\x00" + _byte_range(0, MAX_RESYNC_VERSION) + b"...."
    b"\x00[\x01-\xff])",
    re.DOTALL,
)
_PRINTABLE = re.compile(b"[\x20-\x7e]*")


def plausible_request(buffer: bytearray, at: int) -> bool | None:
    """Whether a request header (v1+: with a client id) can start at `at`; None if the bytes are not all in view.

    The size fits its header and the cap, the api key is Kafka's (0..MAX_KAFKA_API_KEY) or fencer's, the
    version is at most MAX_RESYNC_VERSION, the correlation id is not negative, and the client id is 1..255
    printable ASCII bytes (clients name themselves; runs of zeros would otherwise look like empty ones)."""
    if len(buffer) < at + REQUEST_PROBE:
        return None
    if not REQUEST_CANDIDATE.match(buffer, at):
        return False
    size, _key, _version, correlation = REQUEST_HEAD.unpack_from(buffer, at)
    client_id = _CLIENT_ID_LENGTH.unpack_from(buffer, at + 12)[0]
    if correlation < 0 or not 0 < client_id < 256 or not 10 + client_id <= size <= MAX_FRAME:
        return False
    if len(buffer) < at + REQUEST_PROBE + client_id:
        return None
    return _PRINTABLE.fullmatch(buffer, at + REQUEST_PROBE, at + REQUEST_PROBE + client_id) is not None


def tls_record(data: bytes | bytearray, mid_stream: bool) -> bool:
    """A TLS record header: a handshake (or, mid-stream, any content type) of TLS 1.0-1.3 (or SSL 3)."""
    if len(data) < 3 or data[1] != 3 or data[2] > 4:
        return False
    return data[0] == 0x16 or (mid_stream and 0x14 <= data[0] <= 0x17)

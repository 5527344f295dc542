"""The protocol's exception family.

Rules: every failure to read bytes raises a `DecodeError` (or a subclass); every failure to
write a message raises `EncodeError`. Nothing else escapes the codec on bad input: no
`IndexError`, `struct.error`, `MemoryError` or construct exception. The shells map these
to wire behaviour (close the connection, answer an error) at the boundary. Each decode error
carries a short `reason` (h11's hint): what a shell counts and logs a refused frame by.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base of every error the codec raises."""


class DecodeError(ProtocolError):
    """Bytes that are not a valid encoding of what was expected."""

    reason = "undecodable"


class TruncatedError(DecodeError):
    """The bytes ended before the value did (or a declared length overruns them)."""

    reason = "truncated"


class TrailingBytesError(DecodeError):
    """A message body was decoded but bytes were left over after it."""

    reason = "trailing_bytes"


class CorruptRecordError(DecodeError):
    """A record batch failed its CRC-32C or structural checks."""


class FrameTooLargeError(DecodeError):
    """A frame's size prefix exceeds the configured maximum (or is negative)."""

    reason = "frame_too_large"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame size {size} is outside 0..{limit}")
        self.size = size
        self.limit = limit


class UnknownApiError(DecodeError):
    """A request names an API key this codec does not serve."""

    reason = "unknown_api"

    def __init__(self, api_key: int, api_version: int, correlation_id: int | None) -> None:
        super().__init__(f"unknown api key {api_key} (version {api_version})")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class UnsupportedVersionError(DecodeError):
    """A request names a known API at a version outside its supported range."""

    reason = "unsupported_version"

    def __init__(self, api_key: int, api_version: int, correlation_id: int | None) -> None:
        super().__init__(f"unsupported version {api_version} of api key {api_key}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class EncodeError(ProtocolError):
    """A message that cannot be written at the requested version (bad value, wrong version)."""

"""Kafka's string form of UUIDs (cluster ids, directory ids, topic ids) and its random ids.

Kafka's `Uuid.toString()` is the URL-safe base64 of the 16 bytes without padding: 22
characters. `Uuid.randomUuid()` never returns a reserved id (the all-zero id, and the ids
below 100 that Kafka keeps for special directories and the metadata topic) nor one whose
string starts with "-" (it would read as a command-line flag).
"""

from __future__ import annotations

import base64
import binascii
import uuid

_RESERVED_BELOW = 100


def uuid_string(value: uuid.UUID) -> str:
    """Kafka's string for a UUID: 22 characters of URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def parse_uuid_string(text: str) -> uuid.UUID:
    """The UUID of a Kafka UUID string (raises `ValueError` on anything else)."""
    if len(text) != 22:
        raise ValueError(f"a Kafka UUID string has 22 characters, {text!r} has {len(text)}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{text!r} is not URL-safe base64: {exc}") from None
    if len(raw) != 16 or uuid_string(uuid.UUID(bytes=raw)) != text:
        raise ValueError(f"{text!r} is not the canonical string of a UUID")
    return uuid.UUID(bytes=raw)


def random_uuid() -> uuid.UUID:
    """A random (version 4) UUID that Kafka's `Uuid.randomUuid()` could have returned."""
    while True:
        candidate = uuid.uuid4()
        if candidate.int >= _RESERVED_BELOW and not uuid_string(candidate).startswith("-"):
            return candidate


def new_cluster_id() -> str:
    """A fresh cluster id in Kafka's form (what `kafka-storage random-uuid` prints)."""
    return uuid_string(random_uuid())

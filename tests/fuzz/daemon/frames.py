"""The frames the fuzzer sends: a template, hostile values, and sometimes its bytes mutated.

`make_frame(context, rng, correlation_id)` picks an API the daemon serves and a version it
serves (`protocol.registry`), builds the template's request, and then, by `rng`:
- leaves it valid (the control: a correct client's request),
- or puts hostile values in it (`values.hostile_variant`): still a well-formed frame, which the
  daemon decodes (whether it then answers or closes, the checks are the same),
- or mutates its bytes (`tests.fuzz.fuzz_decode.mutate`: bit flips, overwrites, truncation,
  insertion, duplication, forged inner lengths, random bytes) under a correct size prefix,
- or forges the size prefix itself (negative, zero, past `--max-frame-bytes`, or more bytes than
  sent, after which the fuzzer shuts its side so that the daemon sees the end of the stream).
Every frame carries a one-line summary (API, version, what was made hostile or mutated) and its
bytes, which replay it (`fuzz_daemon.py --replay FINDINGS.jsonl:N`).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

from protocol.api_keys import ApiKey
from protocol.errors import DecodeError, EncodeError
from protocol.registry import api, encode_request, peek_request
from tests.fuzz.fuzz_decode import mutate

from .context import Context
from .templates import build, served
from .values import hostile_variant

#: the shares of each kind of frame (the rest: byte mutations)
VALID_SHARE, HOSTILE_SHARE, FORGED_SIZE_SHARE = 0.15, 0.6, 0.03
#: client ids of the request header: the usual, null, empty, long
CLIENT_IDS = ("fencer-fuzz", None, "", "c" * 1000)


@dataclass(frozen=True, slots=True)
class Frame:
    data: bytes  # what is sent, size prefix included
    api_key: int | None  # as the payload's header says (None: too short to say)
    version: int
    correlation_id: int | None
    summary: str
    well_formed: bool  # encoded by the codec and not mutated: what the daemon decodes as sent
    forged_size: bool  # the size prefix lies: the fuzzer shuts its side after sending
    max_wait_ms: int  # a Fetch's: how long the daemon may hold it (at most 500 ms)

    @property
    def payload(self) -> bytes:
        return self.data[4:]


def api_name(key: int | None) -> str:
    try:
        return api(key).name if key is not None else "?"
    except KeyError:
        return f"key {key}"


def make_frame(context: Context, rng: random.Random, correlation_id: int) -> Frame:
    key, version = rng.choice(PAIRS)
    template = message = build(key, context, version, rng)
    roll = rng.random()
    changes: list[str] = []
    if roll >= VALID_SHARE:
        message, changes = hostile_variant(message, version, context, rng)
    client_id = rng.choice(CLIENT_IDS) if rng.random() < 0.05 else "fencer-fuzz"
    try:
        data = encode_request(message, version, correlation_id, client_id=client_id)
    except EncodeError:  # a value made of the node's own that leaves its type's range: the template, then
        message, changes = template, []
        data = encode_request(message, version, correlation_id, client_id=client_id)
    summary = f"{api_name(key)} v{version}"
    if client_id != "fencer-fuzz":
        summary += (
            f", client id {client_id if client_id is None or len(client_id) < 10 else f'{len(client_id)} chars'!r}"
        )
    summary += f": {'; '.join(changes) if changes else 'the template'}"
    max_wait = int(getattr(message, "max_wait_ms", 0)) if key == ApiKey.FETCH else 0
    if roll < VALID_SHARE + HOSTILE_SHARE:
        return Frame(data, key, version, correlation_id, summary, True, False, max_wait)
    if roll < VALID_SHARE + HOSTILE_SHARE + FORGED_SIZE_SHARE:
        return forge_size(data, key, version, correlation_id, summary, rng)
    return mutated(data, summary, rng)


def mutated(data: bytes, summary: str, rng: random.Random) -> Frame:
    """The frame's payload mutated, under a size prefix that matches it."""
    payload = data[4:]
    changed = mutate(payload, rng)
    first = next(
        (i for i, (a, b) in enumerate(zip(payload, changed, strict=False)) if a != b), min(len(payload), len(changed))
    )
    try:
        key, version, correlation = peek_request(changed)
    except DecodeError:
        key, version, correlation = None, -1, None
    summary += f"; bytes mutated ({len(payload)} -> {len(changed)} bytes, first difference at {first})"
    return Frame(struct.pack(">i", len(changed)) + changed, key, version, correlation, summary, False, False, 500)


def forge_size(data: bytes, key: int, version: int, correlation_id: int, summary: str, rng: random.Random) -> Frame:
    payload = data[4:]
    kind, size = rng.choice(
        (
            ("negative", -rng.randrange(1, 2**31)),
            ("zero", 0),
            ("past the frame limit", 100 * 2**20 + 1),
            ("int32 max", 2**31 - 1),
            ("more than sent", len(payload) + rng.randrange(1, 4096)),
        )
    )
    summary += f"; size prefix forged: {kind} ({size})"
    return Frame(struct.pack(">i", size) + payload, key, version, correlation_id, summary, False, True, 0)


#: every served (api key, version): frames pick one uniformly
PAIRS = served()

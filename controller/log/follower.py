"""Checking a leader's batches before a follower appends them verbatim (`append_as_follower`).

Rules:
- The bytes are record batches back to back, as a Fetch answer carries them. Each is checked
  as the recovery scan checks a segment's (`segments.check_batch`: framing, magic, CRC-32C,
  every record, lastOffsetDelta) and against the log as recovery checks it (`Continuity`):
  the first base offset is the log's end, offsets are contiguous, no epoch is negative or goes
  down (the log's last epoch, or its snapshot's when it holds no batch, is the floor), and
  only a control batch (a new leader's LeaderChange) raises it. So whatever a follower accepts,
  recovery accepts at the next open.
- A trailing batch cut short (fewer bytes than its length says) is left out, as Kafka's
  follower does: a leader may cut its answer at `max_bytes` (Kafka's does; fencer's does not).
  Nothing whole at all is refused.
- Anything else refused is an `InvalidRecordsError` naming the batch's byte position and
  offset; the check is pure, so a refusal leaves the log untouched.
"""

from __future__ import annotations

from typing import NamedTuple

from protocol.records.batch import HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH, RecordBatch, batch_size

from .model import InvalidRecordsError
from .segments import BadBatch, Continuity, check_batch


class FollowerBatches(NamedTuple):
    """Checked batches to append: (base offset, bytes) each, the same decoded, the log's new end
    and last epoch."""

    batches: list[tuple[int, bytes]]
    decoded: list[RecordBatch]
    end_offset: int
    last_epoch: int


def check_follower_batches(raw: bytes, log_end_offset: int, last_epoch: int | None) -> FollowerBatches:
    """The whole batches of `raw`, checked to continue a log ending at `log_end_offset` whose last
    batch (or snapshot) has `last_epoch` (None for an empty log); see the module's rules."""
    continuity = Continuity()
    continuity.next_offset, continuity.epoch = log_end_offset, last_epoch
    batches: list[tuple[int, bytes]] = []
    decoded: list[RecordBatch] = []
    position = 0
    while len(raw) - position >= LOG_OVERHEAD:
        size = batch_size(raw, position)
        end = position + size
        if size < HEADER_SIZE:
            length = size - LOG_OVERHEAD
            raise InvalidRecordsError(
                f"at byte {position}: batch length {length} is below the header's {MIN_BATCH_LENGTH}"
            )
        if end > len(raw):
            break  # cut short by the leader's size limit
        data = raw[position:end]
        try:
            batch = check_batch(data, position)
        except BadBatch as bad:
            raise InvalidRecordsError(f"at byte {bad.position}: {bad.reason}") from None
        fault = continuity.check(position, batch)
        if fault is not None:
            raise InvalidRecordsError(f"at byte {fault.position} (offset {fault.offset}): {fault.reason}")
        batches.append((batch.base_offset, data))
        decoded.append(batch)
        position = end
    if not batches:
        raise InvalidRecordsError(f"no whole batch in the {len(raw)} bytes given")
    assert continuity.next_offset is not None and continuity.epoch is not None  # a batch was checked
    return FollowerBatches(batches, decoded, continuity.next_offset, continuity.epoch)

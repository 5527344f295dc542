"""Which partitions each broker is in (a replica of, in the ISR of, or the leader of), as bitmaps.

Fencing a broker, shutting it down or telling it everything it hosts must touch only its own
partitions, so the state keeps, per broker, the partitions it is in (Kafka's BrokersToIsrs keeps
an array of partition ids per broker and topic for the same reason). A set of partition objects
per broker costs about 300 bytes a partition for three such indexes; a bitmap per broker and
topic (bit p: partition p) costs a bit per partition of the topic, and lists its members in
partition order.

Rules:
- `add` and `discard` are O(1), `move` O(brokers named); `discard` of a member that is not
  there does nothing.
- Partition ids below `DENSE_LIMIT` live in the bitmap; any above (Kafka numbers a topic's
  partitions 0 to N-1, but a log may say otherwise) in a set, so that one odd id cannot make a
  bitmap of hundreds of megabytes.
- A topic is named by an int of the caller's (the state uses its id's 128-bit value: an int
  hashes in C, a `uuid.UUID` in Python, and this runs seven times per partition replayed).
- `partitions(broker, topic)` lists the broker's members of the topic in increasing order;
  `topics_of(broker)` the topics it has (or had) members in. A topic goes with `forget_topic`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

#: partition ids from here on are kept in a set, not the bitmap (whose size is the largest id / 8)
DENSE_LIMIT = 1 << 20
#: the positions of the set bits of each byte value
_BITS = tuple(tuple(bit for bit in range(8) if value >> bit & 1) for value in range(256))


class _Members:
    """One broker's members of one topic."""

    __slots__ = ("bitmap", "sparse")

    def __init__(self) -> None:
        self.bitmap = bytearray()
        self.sparse: set[int] | None = None


class BrokerIndex:
    __slots__ = ("_members",)

    def __init__(self) -> None:
        #: broker -> topic id -> its members
        self._members: dict[int, dict[int, _Members]] = {}

    def add(self, broker_id: int, topic: int, partition: int) -> None:
        self.move(topic, partition, (), (broker_id,))

    def move(self, topic: int, partition: int, before: tuple[int, ...], after: tuple[int, ...]) -> None:
        """The partition leaves the brokers of `before` that are not in `after` and joins those of
        `after` that are not in `before` (one call per list changed: replay runs it for every
        partition record, so the loop is here, not around `add`)."""
        for broker_id in before:
            if broker_id not in after:
                self.discard(broker_id, topic, partition)
        dense = 0 <= partition < DENSE_LIMIT
        at, bit = partition >> 3, 1 << (partition & 7)
        every = self._members
        for broker_id in after:
            if broker_id in before:
                continue
            topics = every.get(broker_id)
            if topics is None:
                topics = every[broker_id] = {}
            members = topics.get(topic)
            if members is None:
                members = topics[topic] = _Members()
            if not dense:
                if members.sparse is None:
                    members.sparse = set()
                members.sparse.add(partition)
                continue
            bitmap = members.bitmap
            if len(bitmap) <= at:
                bitmap.extend(bytes(at + 1 - len(bitmap)))
            bitmap[at] |= bit

    def fill(self, topic: int, size: int, members: Iterable[tuple[int, Iterable[int]]]) -> None:
        """Add each (partition, its brokers) of `members` to the topic at once: an index built from
        a whole state (a snapshot's load) in one pass, each broker's bitmap of the topic sized once
        for partitions below `size` (at most `DENSE_LIMIT`; others are added as `move` adds them)."""
        every = self._members
        bitmaps: dict[int, bytearray] = {}
        size = min(size, DENSE_LIMIT)
        width = (size + 7) >> 3
        for partition, brokers in members:
            if not 0 <= partition < size:
                self.move(topic, partition, (), tuple(brokers))
                continue
            at, bit = partition >> 3, 1 << (partition & 7)
            for broker_id in brokers:
                bitmap = bitmaps.get(broker_id)
                if bitmap is None:
                    members_of = every.setdefault(broker_id, {}).setdefault(topic, _Members())
                    bitmap = bitmaps[broker_id] = members_of.bitmap
                    if len(bitmap) < width:
                        bitmap.extend(bytes(width - len(bitmap)))
                bitmap[at] |= bit

    def discard(self, broker_id: int, topic: int, partition: int) -> None:
        members = self._members.get(broker_id, {}).get(topic)
        if members is None:
            return
        if not 0 <= partition < DENSE_LIMIT:
            if members.sparse is not None:
                members.sparse.discard(partition)
            return
        bitmap, at = members.bitmap, partition >> 3
        if at < len(bitmap):
            bitmap[at] &= ~(1 << (partition & 7)) & 0xFF

    def forget_topic(self, topic: int) -> None:
        for topics in self._members.values():
            topics.pop(topic, None)

    def topics_of(self, broker_id: int) -> Collection[int]:
        return self._members.get(broker_id, {}).keys()

    def partitions(self, broker_id: int, topic: int) -> list[int]:
        """The broker's members of the topic, in increasing order."""
        members = self._members.get(broker_id, {}).get(topic)
        if members is None:
            return []
        found = [at << 3 | bit for at, byte in enumerate(members.bitmap) if byte for bit in _BITS[byte]]
        if members.sparse:
            found = sorted([*found, *members.sparse])
        return found

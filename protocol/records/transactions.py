"""Metadata transactions (KIP-868): which records of a metadata log take effect, and when.

Kafka's controller writes an operation that does not fit one atomic batch between a
BeginTransactionRecord and an EndTransactionRecord (Kafka 3.9: the bootstrap records, the ZK
migration). A reader of the log (a controller replaying it, a broker's metadata loader, fencer's
checker) applies them the same way, and `TransactionReplay` is that one rule:

- The data records after a Begin take effect together when its End comes, in log order; an
  AbortTransactionRecord drops them (Kafka reverts to the state before the Begin).
- A transaction still open at the end of what was read is not applied (`open`): its controller
  died before the End. Kafka's next active controller then writes an AbortTransactionRecord
  ("Controller failover") before anything else, so later records are never taken into it.
- Control records (LeaderChange, ...) are Raft's, not the transaction's: they take effect where
  they stand, inside a transaction too.
- Framing, as Kafka's `OffsetControlManager.replay` checks it: a Begin while a transaction is
  open, and an End or Abort with none open, are faults. `framing` is told (a message and the
  offset); Kafka's replay stops there, a checker notes it and goes on (the open transaction goes
  on, the stray marker is ignored).
- A snapshot holds no markers (Kafka refuses one inside a snapshot): `markers_in_snapshot` is
  the message for that fault.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from protocol.spec import Data

from .metadata import AbortTransactionRecord, BeginTransactionRecord, EndTransactionRecord

T = TypeVar("T")
MARKERS = (BeginTransactionRecord, EndTransactionRecord, AbortTransactionRecord)


@dataclass(slots=True)
class OpenTransaction(Generic[T]):
    """A transaction begun and not yet ended: where, its name, and what it holds back."""

    begin: int
    name: str | None
    held: list[T] = field(default_factory=list)

    def describe(self) -> str:
        named = f" ({self.name!r})" if self.name else ""
        return f"the metadata transaction begun at offset {self.begin}{named}"


class TransactionReplay(Generic[T]):
    """Feed every record of a log in order (`take`); apply what it returns, in that order."""

    def __init__(self, framing: Callable[[str, int], None]) -> None:
        self.framing = framing
        self.open: OpenTransaction[T] | None = None
        #: records dropped by aborts so far (for reports)
        self.aborted_records = 0

    def take(self, offset: int, record: Data, item: T, *, control: bool = False) -> Sequence[T]:
        """The items that take effect at `offset`: `item` itself, nothing (held back in a
        transaction, or a marker), or a transaction's held items (at its End)."""
        kind = type(record)
        if kind is BeginTransactionRecord:
            if self.open is not None:
                self.framing(f"a transaction begins while {self.open.describe()} is still open", offset)
            else:
                self.open = OpenTransaction(offset, record.name)  # type: ignore[attr-defined]
            return ()
        if kind is EndTransactionRecord or kind is AbortTransactionRecord:
            transaction, self.open = self.open, None
            if transaction is None:
                self.framing(f"{kind.__name__} while no transaction is open", offset)
                return ()
            if kind is AbortTransactionRecord:
                self.aborted_records += len(transaction.held)
                return ()
            return transaction.held
        if self.open is not None and not control:
            self.open.held.append(item)
            return ()
        return (item,)


def markers_in_snapshot(record: Data, offset: int) -> str:
    """The fault of a transaction marker read from a snapshot (Kafka refuses it there)."""
    return f"{type(record).__name__} at offset {offset} cannot appear within a snapshot"

"""`bootstrap.checkpoint`: the records Kafka's `kafka-storage format` leaves for a new cluster.

Kafka writes DATA_DIR/bootstrap.checkpoint (beside `meta.properties`) when it formats a
controller's directory: a snapshot-format file (SnapshotHeader, the records, SnapshotFooter)
holding the `metadata.version` FeatureLevelRecord, and whatever else the operator asked for
(SCRAM credentials with `--add-scram`, other features). Its active controller writes those
records into the metadata log once, when it first starts on an empty log, inside a metadata
transaction named "Bootstrap records" (KIP-868), and ignores the file from then on.

Rules (fencer does the same):
- Read only when the log holds no metadata record (no snapshot, no data batch: LeaderChange
  control batches do not count, as in Kafka's `LogReplayTracker`); a log that has records
  ignores the file, whatever it holds.
- Read like a snapshot (`snapshots.read_snapshot_file`): a file that is not one is a `LogError`
  naming it; an empty record list is nothing to write.
- fencer formats without one: a directory fencer formats holds no `bootstrap.checkpoint`, and
  fencer writes no `metadata.version` of its own (docs/controller/decisions.md).
"""

from __future__ import annotations

from pathlib import Path

from protocol.spec import Data

from .model import LogError
from .snapshots import SnapshotError, read_snapshot_file

BOOTSTRAP_FILE = "bootstrap.checkpoint"
#: the name of the transaction the bootstrap records are written in (Kafka's)
BOOTSTRAP_TRANSACTION = "Bootstrap records"


def read_bootstrap(data_dir: Path) -> list[tuple[Data, int]]:
    """The records of `data_dir`'s bootstrap.checkpoint (none if there is no such file)."""
    path = Path(data_dir) / BOOTSTRAP_FILE
    try:
        return read_snapshot_file(path)
    except FileNotFoundError:
        return []
    except (SnapshotError, OSError) as exc:
        raise LogError(f"{path} cannot be read as Kafka's bootstrap records: {exc}") from None

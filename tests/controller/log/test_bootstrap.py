"""`bootstrap.checkpoint` (controller.log.bootstrap): a Kafka-formatted directory's bootstrap
records are written once, inside the "Bootstrap records" transaction, when the controller first
starts on a log without a metadata record, and ignored from then on."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from controller.engine import ControllerEngine
from controller.log import LogError, MetadataLog
from controller.log.bootstrap import BOOTSTRAP_FILE
from controller.log.snapshots import encode_snapshot
from protocol.records.control import LeaderChangeMessage
from protocol.records.metadata import (
    BeginTransactionRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    TopicRecord,
    UserScramCredentialRecord,
)
from protocol.spec import Data

METADATA_VERSION = FeatureLevelRecord(name="metadata.version", feature_level=21)  # 3.9-IV0
SCRAM = UserScramCredentialRecord(name="alice", mechanism=1, salt=b"salt", stored_key=b"k", server_key=b"s")


def write_bootstrap(data_dir: Path, records: list[Data]) -> None:
    """A bootstrap.checkpoint as `kafka-storage format` leaves it (epoch 0, a snapshot's framing)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / BOOTSTRAP_FILE).write_bytes(b"".join(encode_snapshot(0, [(r, 0) for r in records], 0)))


def start(data_dir: Path) -> ControllerEngine:
    return ControllerEngine.start(data_dir, fsync=False, now_ns=0, cluster_id="bootstrapped-cluster")


def log_records(data_dir: Path) -> list[Data]:
    with MetadataLog.open(data_dir, fsync=False) as log:
        return [entry.record for entry in log.read(0)]


def test_a_new_log_gets_the_bootstrap_records_in_a_transaction_once(tmp_path: Path) -> None:
    write_bootstrap(tmp_path, [METADATA_VERSION, SCRAM])
    engine = start(tmp_path)
    assert engine.core.state.kept.features == {"metadata.version": 21}
    assert len(engine.core.state.kept.scram) == 1
    engine.close()
    first, *rest = log_records(tmp_path)
    assert isinstance(first, LeaderChangeMessage)
    assert rest == [BeginTransactionRecord(name="Bootstrap records"), METADATA_VERSION, SCRAM, EndTransactionRecord()]
    engine = start(tmp_path)  # the log has records now: the file is not read again
    assert engine.core.state.kept.features == {"metadata.version": 21}
    engine.close()
    assert sum(isinstance(r, BeginTransactionRecord) for r in log_records(tmp_path)) == 1


def test_restarts_before_any_record_still_bootstrap(tmp_path: Path) -> None:
    start(tmp_path).close()  # formatted by fencer: only a LeaderChange, no metadata record
    write_bootstrap(tmp_path, [METADATA_VERSION])
    engine = start(tmp_path)
    assert engine.core.state.kept.features == {"metadata.version": 21}
    engine.close()


def test_a_log_with_records_ignores_the_file(tmp_path: Path) -> None:
    start(tmp_path).close()
    with MetadataLog.open(tmp_path, fsync=False) as log:
        log.append([[(TopicRecord(name="t", topic_id=uuid.UUID(int=5)), 0)]], log.last_epoch, 0)
    write_bootstrap(tmp_path, [METADATA_VERSION])
    engine = start(tmp_path)
    assert engine.core.state.kept.features == {}
    engine.close()
    (tmp_path / BOOTSTRAP_FILE).write_bytes(b"not a checkpoint")  # not even read
    start(tmp_path).close()


def test_an_unreadable_bootstrap_file_on_a_new_log_is_refused_naming_it(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    good = b"".join(encode_snapshot(0, [(METADATA_VERSION, 0)], 0))
    (tmp_path / BOOTSTRAP_FILE).write_bytes(good[:-5])  # cut short: no footer
    with pytest.raises(LogError, match=r"bootstrap\.checkpoint cannot be read as Kafka's bootstrap records"):
        start(tmp_path)


def test_a_fencer_formatted_directory_has_no_bootstrap_file_and_no_metadata_version(tmp_path: Path) -> None:
    engine = start(tmp_path)
    assert engine.core.state.kept.features == {}
    engine.close()
    assert not (tmp_path / BOOTSTRAP_FILE).exists()

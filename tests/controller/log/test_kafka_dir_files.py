"""Adopting a Kafka-written data dir: meta.properties v0/v1 and `__cluster_metadata-0/quorum-state`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.log import LogError, MetadataLog
from controller.log.properties import MetaProperties, read_meta_properties, render
from controller.log.quorum_state import QuorumState, parse

# As Kafka's PropertiesUtils.writePropertiesFile (Properties.store with an empty comment) writes them.
V0 = "#\n#Tue Mar 05 10:11:12 UTC 2024\nbroker.id=3\nversion=0\ncluster.id=J8f2pEXlRQyyM7eXRjJ7Ug\n"
V1 = "#\n#Thu Nov 21 06:17:00 UTC 2024\ncluster.id=J8f2pEXlRQyyM7eXRjJ7Ug\nnode.id=1\nversion=1\n"
V1_DIR = (
    "#\n#Thu Nov 21 06:17:00 UTC 2024\ncluster.id=J8f2pEXlRQyyM7eXRjJ7Ug\n"
    "directory.id=ptqLfIYXQQaGk1C3KjHnGQ\nnode.id=1\nversion=1\n"
)
KAFKA_QUORUM_STATE_V0 = (
    '{"clusterId":"","leaderId":1,"leaderEpoch":14,"votedId":-1,"appliedOffset":0,'
    '"currentVoters":[{"voterId":1}],"data_version":0}'
)
KAFKA_QUORUM_STATE_V1 = (
    '{"leaderId":1,"leaderEpoch":14,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
)


def write(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "meta.properties"
    path.write_text(text)
    return path


def test_zookeeper_era_v0_takes_node_id_from_broker_id(tmp_path: Path) -> None:
    meta = read_meta_properties(write(tmp_path, V0))
    assert (meta.version, meta.cluster_id, meta.node_id, meta.directory_id) == (0, "J8f2pEXlRQyyM7eXRjJ7Ug", 3, None)
    with MetadataLog.open(tmp_path, node_id=3, fsync=False) as log:
        assert log.cluster_id == "J8f2pEXlRQyyM7eXRjJ7Ug"
    assert (tmp_path / "meta.properties").read_text() == V0  # never rewritten


@pytest.mark.parametrize(("text", "directory_id"), [(V1, None), (V1_DIR, "ptqLfIYXQQaGk1C3KjHnGQ")])
def test_kraft_v1_with_and_without_directory_id(tmp_path: Path, text: str, directory_id: str | None) -> None:
    meta = read_meta_properties(write(tmp_path, text))
    assert meta == MetaProperties("J8f2pEXlRQyyM7eXRjJ7Ug", 1, directory_id)
    with MetadataLog.open(tmp_path, node_id=1, fsync=False) as log:
        assert log.cluster_id == "J8f2pEXlRQyyM7eXRjJ7Ug"
    assert (tmp_path / "meta.properties").read_text() == text


def test_rendering_keeps_every_key_read(tmp_path: Path) -> None:
    text = V1_DIR.replace("node.id=1\n", "node.id=1\nsome.future.key=x\n")
    meta = read_meta_properties(write(tmp_path, text))
    assert meta.others == (("some.future.key", "x"),)
    assert render(meta, datetime(2024, 11, 21, 6, 17, 0, tzinfo=UTC)) == text
    v0 = read_meta_properties(write(tmp_path / "zk", V0))
    assert "broker.id=3\n" in render(v0, datetime(2024, 3, 5, tzinfo=UTC))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (V1.replace("version=1", "version=2"), r"meta\.properties: version is '2', only versions 0"),
        (V1.replace("version=1\n", ""), r"meta\.properties: version is None"),
        (V1.replace("cluster.id=J8f2pEXlRQyyM7eXRjJ7Ug\n", ""), r"meta\.properties: no cluster\.id"),
        (V0.replace("cluster.id=J8f2pEXlRQyyM7eXRjJ7Ug\n", ""), r"meta\.properties: no cluster\.id"),
        (V0.replace("broker.id=3", "node.id=3"), r"meta\.properties: broker\.id is None, not an integer"),
        ("\x00\xff garbage", r"meta\.properties: version is None"),
    ],
)
def test_unknown_version_or_missing_ids_name_the_file(tmp_path: Path, text: str, reason: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(LogError, match=reason):
        read_meta_properties(path)


def test_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(LogError, match=r"cannot read .*meta\.properties"):
        read_meta_properties(tmp_path / "meta.properties")


# ---------------------------------------------------------------------------- quorum-state
def test_quorum_state_is_written_with_the_new_epoch(tmp_path: Path) -> None:
    with MetadataLog.open(tmp_path, node_id=4, fsync=True) as log:
        log.append_leader_change(1, 4, 1_000)
        log.append_leader_change(2, 4, 2_000)
    path = tmp_path / "__cluster_metadata-0" / "quorum-state"
    text = path.read_text()
    assert text == (
        '{"clusterId":"","leaderId":4,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":4}],"data_version":0}'
    )
    assert json.loads(text)["leaderEpoch"] == 2
    assert not path.with_name("quorum-state.tmp").exists()
    with MetadataLog.open(tmp_path, node_id=4, fsync=False) as log:
        assert log.quorum_state == QuorumState(4, 2, -1, 0)
        assert not any("quorum-state" in m for m in log.recovery.messages)


@pytest.mark.parametrize(
    ("text", "state"),
    [(KAFKA_QUORUM_STATE_V0, QuorumState(1, 14, -1, 0)), (KAFKA_QUORUM_STATE_V1, QuorumState(1, 14, -1, 1))],
)
def test_a_kafka_written_quorum_state_is_accepted(tmp_path: Path, text: str, state: QuorumState) -> None:
    assert parse(text) == state
    write(tmp_path, V1)
    (tmp_path / "__cluster_metadata-0").mkdir()
    (tmp_path / "__cluster_metadata-0" / "quorum-state").write_text(text)
    with MetadataLog.open(tmp_path, node_id=1, fsync=False) as log:
        assert log.quorum_state == state
        assert not any("quorum-state" in m for m in log.recovery.messages)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"leaderId":1,"leaderEpoch":14', "not JSON"),
        ('{"leaderId":1,"leaderEpoch":14,"votedId":-1}', "no data_version"),
        ('{"leaderEpoch":"x","data_version":0}', "leaderEpoch is 'x'"),
        ('{"leaderEpoch":1,"data_version":7}', "unknown data_version 7"),
        ("[]", "not a JSON object"),
    ],
)
def test_a_garbled_quorum_state_is_a_warning_naming_the_file(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / "__cluster_metadata-0").mkdir(parents=True)
    path = tmp_path / "__cluster_metadata-0" / "quorum-state"
    path.write_text(text)
    with MetadataLog.open(tmp_path, node_id=1, fsync=False) as log:
        assert log.quorum_state is None
        warnings = [m for m in log.recovery.messages if str(path) in m]
        assert len(warnings) == 1 and warnings[0].startswith("warning:") and reason in warnings[0]
        log.append_leader_change(1, 1, 1_000)
    assert parse(path.read_text()) == QuorumState(1, 1, -1, 0)

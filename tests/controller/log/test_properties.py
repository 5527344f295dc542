"""meta.properties text, Java properties parsing, and Kafka's UUID strings."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.log import LogError
from controller.log.ids import new_cluster_id, parse_uuid_string, random_uuid, uuid_string
from controller.log.properties import MetaProperties, parse, read_meta_properties, render, write_meta_properties


def test_render_lays_the_file_out_as_java_properties_store_does() -> None:
    props = MetaProperties("J8f2pEXlRQyyM7eXRjJ7Ug", 1, "ptqLfIYXQQaGk1C3KjHnGQ")
    text = render(props, datetime(2024, 11, 21, 6, 17, 0, tzinfo=UTC))
    assert text == (
        "#\n#Thu Nov 21 06:17:00 UTC 2024\n"
        "cluster.id=J8f2pEXlRQyyM7eXRjJ7Ug\ndirectory.id=ptqLfIYXQQaGk1C3KjHnGQ\nnode.id=1\nversion=1\n"
    )


def test_parse_accepts_what_java_properties_load_accepts() -> None:
    text = "# comment\n! another\n\n  cluster.id = abc\nnode.id:7\nversion 1\nempty=\n"
    assert parse(text) == {"cluster.id": "abc", "node.id": "7", "version": "1", "empty": ""}


def test_written_properties_read_back(tmp_path: Path) -> None:
    props = MetaProperties.new(None, 9)
    write_meta_properties(tmp_path, props, fsync=True)
    assert read_meta_properties(tmp_path / "meta.properties") == props
    assert not (tmp_path / "meta.properties.tmp").exists()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("version=1\nnode.id=1\n", "no cluster.id"),
        ("version=1\ncluster.id=a\nnode.id=one\n", "not an integer"),
        ("cluster.id=a\nnode.id=1\n", r"only versions 0 \(ZooKeeper\) and 1"),
    ],
)
def test_bad_properties_are_log_errors(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "meta.properties"
    path.write_text(text)
    with pytest.raises(LogError, match=reason):
        read_meta_properties(path)


def test_kafka_uuid_strings() -> None:
    assert uuid_string(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_string(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"  # Kafka's METADATA_TOPIC_ID
    for _ in range(200):
        cluster_id = new_cluster_id()
        assert len(cluster_id) == 22 and not cluster_id.startswith("-")
        assert random_uuid().int >= 100
    with pytest.raises(ValueError):
        parse_uuid_string("too-short")
    with pytest.raises(ValueError):
        parse_uuid_string("AAAAAAAAAAAAAAAAAAAAAB")  # not canonical: the last character carries spare bits


@given(st.uuids())
def test_uuid_strings_round_trip(value: uuid.UUID) -> None:
    assert parse_uuid_string(uuid_string(value)) == value

"""dump-log: Kafka's dump-log lines, Kafka's JSON, read-only, exit statuses."""

from __future__ import annotations

import hashlib
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from controller.__main__ import main
from controller.log.kafka_json import camel_case, metadata_payload, record_type_name, to_json_tree
from protocol.records.batch_writer import metadata_batch
from protocol.records.control import (
    KRaftVersionRecord,
    VotersRecord,
    VotersRecordEndpoint,
    VotersRecordKRaftVersionFeature,
    VotersRecordVoter,
    control_batch,
)
from protocol.records.metadata import (
    AbortTransactionRecord,
    AccessControlEntryRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ClientQuotaRecordEntityData,
    ConfigRecord,
    DelegationTokenRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    NoOpRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    RegisterControllerRecord,
    RegisterControllerRecordControllerEndpoint,
    RegisterControllerRecordControllerFeature,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
    ZkMigrationStateRecord,
)
from protocol.spec import Data
from tests.controller.log.helpers import TOPIC_ID, build_log, flip_bit, isr_change, segment, topic

ROOT = Path(__file__).resolve().parents[3]
TOPIC_ID_STRING = "T04KW218Th-aKzxNXm96iw"  # helpers.TOPIC_ID, as Kafka prints it


def _crc(data: bytes, position: int) -> int:
    return int(struct.unpack_from(">I", data, position + 17)[0])


def _dump(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    status = main(["dump-log", str(data_dir)])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def test_dump_prints_kafkas_lines_for_segments_then_snapshots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with build_log(tmp_path, [[isr_change(0, (1, 2))], [topic("a"), topic("b")]]) as log:
        log.write_snapshot(log.next_offset, 1, [topic("a")], 5_000)
    data = segment(tmp_path).read_bytes()
    status, lines, _ = _dump(tmp_path, capsys)
    assert status == 0
    assert lines[:2] == [f"Dumping {segment(tmp_path)}", "Log starting offset: 0"]
    assert lines[2] == (
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 1 isTransactional: false isControl: true deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: 1000 size: 91 magic: 2 compresscodec: none crc: {_crc(data, 0)} isvalid: true"
    )
    assert lines[3] == (
        "| offset: 0 CreateTime: 1000 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] LeaderChange: "
        '{"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[{"voterId":1}]}'
    )
    assert lines[4].startswith("baseOffset: 1 lastOffset: 1 count: 1 ") and "position: 91 CreateTime: 2000" in lines[4]
    assert lines[5] == (
        "| offset: 1 CreateTime: 2000 keySize: -1 valueSize: 35 sequence: -1 headerKeys: [] payload: "
        '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,'
        f'"topicId":"{TOPIC_ID_STRING}","isr":[1,2]}}}}'
    )
    assert lines[6].startswith("baseOffset: 2 lastOffset: 3 count: 2 ") and "isControl: false" in lines[6]
    assert lines[7].endswith(
        f'payload: {{"type":"TOPIC_RECORD","version":0,"data":{{"name":"a","topicId":"{TOPIC_ID_STRING}"}}}}'
    )
    assert lines[9] == f"Dumping {tmp_path / '__cluster_metadata-0' / '00000000000000000004-0000000001.checkpoint'}"
    assert lines[10] == "Snapshot end offset: 4, epoch: 1"
    assert lines[12].endswith('SnapshotHeader {"version":0,"lastContainedLogTimestamp":5000}')
    assert lines[14].endswith('"data":{"name":"a","topicId":"T04KW218Th-aKzxNXm96iw"}}')
    assert lines[16].endswith('SnapshotFooter {"version":0}')
    assert len(lines) == 17


def test_json_follows_kafkas_converter_rules() -> None:
    broker = RegisterBrokerRecord(
        broker_id=3,
        incarnation_id=uuid.UUID(int=1),
        broker_epoch=10,
        end_points=(RegisterBrokerRecordBrokerEndpoint(name="PLAINTEXT", host="h", port=9092),),
        rack=None,
    )
    assert to_json_tree(broker, 0) == {  # v0: no isMigratingZkBroker, no inControlledShutdown; null rack
        "brokerId": 3,
        "incarnationId": "AAAAAAAAAAAAAAAAAAAAAQ",
        "brokerEpoch": 10,
        "endPoints": [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}],
        "features": [],
        "rack": None,
        "fenced": True,
    }
    assert "logDirs" not in to_json_tree(broker, 3)  # tagged, at its default
    assert to_json_tree(broker, 3)["isMigratingZkBroker"] is False
    partition = PartitionRecord(partition_id=1, replicas=(1,), isr=(1,), leader=1, eligible_leader_replicas=(2,))
    assert to_json_tree(partition, 2)["eligibleLeaderReplicas"] == [2]
    assert "lastKnownElr" not in to_json_tree(partition, 2)
    change = BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=5, fenced=-1)
    assert metadata_payload(change, 0) == (
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1,"brokerEpoch":5,"fenced":-1}}'
    )
    assert camel_case("is_migrating_zk_broker") == "isMigratingZkBroker"
    assert record_type_name(RegisterBrokerRecord) == "REGISTER_BROKER_RECORD"


def test_dump_never_modifies_the_data_dir_and_reports_a_torn_tail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with build_log(tmp_path, [[topic("a")]]) as log:
        log.write_snapshot(2, 1, [topic("a")], 0)
    size = segment(tmp_path).stat().st_size
    with segment(tmp_path).open("ab") as out:
        out.write(b"\x00" * 17)

    def state() -> dict[str, tuple[str, int]]:
        return {
            str(path.relative_to(tmp_path)): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
            for path in sorted(tmp_path.rglob("*"))
            if path.is_file()
        }

    before = state()
    status, lines, _ = _dump(tmp_path, capsys)
    assert state() == before
    assert status == 1
    assert f"Found 17 invalid bytes at the end of 00000000000000000000.log: at byte {size} (offset 2): " in lines[6]
    assert lines[7].startswith("Dumping ") and lines[7].endswith(".checkpoint")


def test_dump_of_a_retained_log_starts_at_its_first_kept_segment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with build_log(tmp_path, [[topic(str(i))] for i in range(20)], segment_bytes=300) as log:
        for end in (7, 14, 21):
            log.write_snapshot(end, 1, [topic("a")], 0)
        log.apply_retention(log.total_bytes - 1)
        start = log.log_start_offset
        kept = log.snapshots()
    assert start > 0 and len(kept) == 2
    status, lines, _ = _dump(tmp_path, capsys)
    assert status == 0
    assert lines[1] == f"Log starting offset: {start}"
    assert lines[2].startswith(f"baseOffset: {start} ")
    offsets = [int(line.split()[2]) for line in lines if line.startswith("| offset: ") and "payload" in line]
    assert offsets[: 21 - start] == list(range(start, 21))  # the segments, contiguous from the log start
    headers = [line for line in lines if line.startswith("Snapshot end offset: ")]
    assert headers == [f"Snapshot end offset: {s.end_offset}, epoch: {s.epoch}" for s in kept]


def test_dump_of_a_corrupt_middle_batch_prints_what_was_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with build_log(tmp_path, [[topic("a")], [topic("b")], [topic("c")]]) as log:
        positions = [position for _, position, _ in log.batches()]
    data = segment(tmp_path).read_bytes()
    segment(tmp_path).write_bytes(flip_bit(data, positions[2] + 30, 5))
    status, lines, _ = _dump(tmp_path, capsys)
    assert status == 1
    assert [line.split(" lastOffset")[0] for line in lines if line.startswith("baseOffset")] == [
        "baseOffset: 0",
        "baseOffset: 1",
    ]
    assert lines[-1].startswith(
        f"Found {len(data) - positions[2]} invalid bytes at the end of 00000000000000000000.log: "
        f"at byte {positions[2]} (offset 2): "
    )
    assert "CRC" in lines[-1]


def test_an_undecodable_record_is_reported_inline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_log(tmp_path, [[topic("a")]]).close()
    with segment(tmp_path).open("ab") as out:
        out.write(metadata_batch(2, 1, 0, [b"\x01\x63\x00"]))
    status, lines, _ = _dump(tmp_path, capsys)
    assert status == 1
    assert "payload: Error at 2, skipping. unknown metadata record type 99" in lines[-1]


def test_bad_usage_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    for argument, reason in [
        (tmp_path / "missing", "no such file or directory"),
        (tmp_path / "empty", "not a controller data directory"),
    ]:
        status, lines, err = _dump(argument, capsys)
        assert (status, lines) == (2, [])
        assert err.count("\n") == 1 and reason in err
    assert main(["dump-log"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    build_log(tmp_path / "good", [[topic("a")]]).close()
    assert main(["dump-log", str(tmp_path / "good"), str(tmp_path / "missing")]) == 2  # nothing dumped
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1


def test_single_files_segments_snapshots_and_bootstrap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with build_log(tmp_path, [[topic("a")]]) as log:
        snapshot = log.write_snapshot(log.next_offset, 1, [topic("a")], 5_000)
    (tmp_path / "bootstrap.checkpoint").write_bytes(snapshot.read_bytes())
    status, lines, _ = _dump(snapshot, capsys)
    assert status == 0 and lines[:2] == [f"Dumping {snapshot}", "Snapshot end offset: 2, epoch: 1"]
    status, lines, _ = _dump(segment(tmp_path), capsys)
    assert status == 0 and lines[:2] == [f"Dumping {segment(tmp_path)}", "Log starting offset: 0"]
    assert len(lines) == 6
    status, whole, _ = _dump(tmp_path, capsys)  # a data dir: segments, snapshots, then bootstrap.checkpoint
    assert status == 0
    assert whole[-8:-6] == [f"Dumping {tmp_path / 'bootstrap.checkpoint'}", "Bootstrap checkpoint"]
    assert main(["dump-log", str(segment(tmp_path)), str(snapshot)]) == 0
    assert capsys.readouterr().out.splitlines() == lines + whole[6:14]
    (tmp_path / "junk").write_text("x")  # a file that is no log: read as a segment, its bytes invalid
    status, lines, _ = _dump(tmp_path / "junk", capsys)
    assert status == 1 and lines[-1].startswith("Found 1 invalid bytes at the end of junk")


def test_python_dash_m_controller_dump_log(tmp_path: Path) -> None:
    build_log(tmp_path, [[topic("a")]]).close()
    done = subprocess.run(
        [sys.executable, "-m", "controller", "dump-log", str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"Dumping {segment(tmp_path)}"
    assert len(done.stdout.splitlines()) == 6
    assert main(["dump-log", str(tmp_path / "__cluster_metadata-0")]) == 0  # the partition directory itself works too
    no_command = subprocess.run([sys.executable, "-m", "controller"], cwd=ROOT, capture_output=True, text=True)
    assert no_command.returncode == 2 and no_command.stderr.count("\n") == 1


NEW_KAFKA_39_RECORDS: list[tuple[Data, str]] = [
    (
        ConfigRecord(resource_type=2, resource_name="a", name="cleanup.policy", value=None),
        '{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"a","name":"cleanup.policy",'
        '"value":null}}',
    ),
    (
        DelegationTokenRecord(owner="User:o", requester="User:r", renewers=("User:x",), token_id="t"),
        '{"type":"DELEGATION_TOKEN_RECORD","version":0,"data":{"owner":"User:o","requester":"User:r",'
        '"renewers":["User:x"],"issueTimestamp":0,"maxTimestamp":0,"expirationTimestamp":0,"tokenId":"t"}}',
    ),
    (
        UserScramCredentialRecord(name="u", mechanism=1, salt=b"s", stored_key=b"k", server_key=b"", iterations=4096),
        '{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"u","mechanism":1,"salt":"cw==",'
        '"storedKey":"aw==","serverKey":"","iterations":4096}}',
    ),
    (
        FeatureLevelRecord(name="metadata.version", feature_level=21),
        '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":21}}',
    ),
    (
        ClientQuotaRecord(
            entity=(ClientQuotaRecordEntityData(entity_type="user", entity_name=None),), key="k", value=1.5
        ),
        '{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user","entityName":null}],'
        '"key":"k","value":1.5,"remove":false}}',
    ),
    (
        ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=1000),
        '{"type":"PRODUCER_IDS_RECORD","version":0,"data":{"brokerId":1,"brokerEpoch":5,"nextProducerId":1000}}',
    ),
    (
        AccessControlEntryRecord(id=TOPIC_ID, resource_type=2, resource_name="a", principal="User:u", host="*"),
        '{"type":"ACCESS_CONTROL_ENTRY_RECORD","version":0,"data":{"id":"' + TOPIC_ID_STRING + '","resourceType":2,'
        '"resourceName":"a","patternType":0,"principal":"User:u","host":"*","operation":0,"permissionType":0}}',
    ),
    (
        RemoveAccessControlEntryRecord(id=TOPIC_ID),
        '{"type":"REMOVE_ACCESS_CONTROL_ENTRY_RECORD","version":0,"data":{"id":"' + TOPIC_ID_STRING + '"}}',
    ),
    (NoOpRecord(), '{"type":"NO_OP_RECORD","version":0,"data":{}}'),
    (
        ZkMigrationStateRecord(zk_migration_state=0),
        '{"type":"ZK_MIGRATION_STATE_RECORD","version":0,"data":{"zkMigrationState":0}}',
    ),
    (
        RemoveUserScramCredentialRecord(name="u", mechanism=2),
        '{"type":"REMOVE_USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"u","mechanism":2}}',
    ),
    (BeginTransactionRecord(name="x"), '{"type":"BEGIN_TRANSACTION_RECORD","version":0,"data":{"name":"x"}}'),
    (EndTransactionRecord(), '{"type":"END_TRANSACTION_RECORD","version":0,"data":{}}'),
    (AbortTransactionRecord(), '{"type":"ABORT_TRANSACTION_RECORD","version":0,"data":{}}'),
    (
        RemoveDelegationTokenRecord(token_id="t"),
        '{"type":"REMOVE_DELEGATION_TOKEN_RECORD","version":0,"data":{"tokenId":"t"}}',
    ),
    (
        RegisterControllerRecord(
            controller_id=3000,
            end_points=(RegisterControllerRecordControllerEndpoint(name="C", host="h", port=9093),),
            features=(RegisterControllerRecordControllerFeature(name="f", max_supported_version=1),),
        ),
        '{"type":"REGISTER_CONTROLLER_RECORD","version":0,"data":{"controllerId":3000,'
        '"incarnationId":"AAAAAAAAAAAAAAAAAAAAAA","zkMigrationReady":false,'
        '"endPoints":[{"name":"C","host":"h","port":9093,"securityProtocol":0}],'
        '"features":[{"name":"f","minSupportedVersion":0,"maxSupportedVersion":1}]}}',
    ),
]


def test_dump_prints_every_record_type_kafka_3_9_added(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_log(tmp_path, [[(record, 0) for record, _ in NEW_KAFKA_39_RECORDS]]).close()
    voter = VotersRecordVoter(
        voter_id=1,
        endpoints=(VotersRecordEndpoint(name="C", host="h", port=9093),),
        k_raft_version_feature=VotersRecordKRaftVersionFeature(max_supported_version=1),
    )
    controls = [(KRaftVersionRecord(k_raft_version=1), 0), (VotersRecord(voters=(voter,)), 0)]
    with segment(tmp_path).open("ab") as out:
        out.write(control_batch(1 + len(NEW_KAFKA_39_RECORDS), 1, 3_000, controls))
    status, lines, _ = _dump(tmp_path, capsys)
    assert status == 0, lines
    payloads = [line.split(" payload: ", 1)[1] for line in lines if " payload: " in line]
    assert payloads == [expected for _, expected in NEW_KAFKA_39_RECORDS]
    assert lines[-2].endswith('headerKeys: [] KRaftVersion {"version":0,"kRaftVersion":1}')
    assert lines[-1].endswith(
        'headerKeys: [] KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
        '"endpoints":[{"name":"C","host":"h","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )


def test_offsets_a_log_skips_are_shown_as_kafka_shows_them_and_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trimmed log (a batch at offset 1 in segment 0, then one at 34): Kafka's tool reads it;
    the controller and the checker refuse it (tests/controller/log/test_recovery.py)."""
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir(parents=True)
    first = metadata_batch(1, 1, 0, [b"\x01\x14\x00\x00"] * 4)  # four NoOpRecords, offsets 1..4
    later = metadata_batch(34, 1, 0, [b"\x01\x14\x00\x00"])
    (partition / "00000000000000000000.log").write_bytes(first + later)
    status, lines, err = _dump(tmp_path, capsys)
    assert status == 0
    assert [line.split(" lastOffset")[0] for line in lines if line.startswith("baseOffset")] == [
        "baseOffset: 1",
        "baseOffset: 34",
    ]
    assert err == "dump-log: note: the segments skip offsets 0..0, 5..33 (no batch holds them)\n"
    going_back = metadata_batch(2, 1, 0, [b"\x01\x14\x00\x00"])  # after the skip to 34: the skip is blamed
    (partition / "00000000000000000000.log").write_bytes(first + later + going_back)
    status, lines, _ = _dump(tmp_path, capsys)
    assert status == 1
    assert lines[-1].endswith(
        f"at byte {len(first)} (offset 5): base offset 34 skips offsets 5..33, but the batch after it has 2"
    )

"""`--claim-broker-ids`: replicas sharing a directory get distinct slots, even when they claim at once;
a run started again gets a new slot; the command line turns the slot into ids, seed and paths of its own."""

from __future__ import annotations

import socket
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from broker_sim.cli import parse_run, run_command
from broker_sim.shell.claims import claim_slot

PROG = "python -m broker_sim run"


def test_two_claimers_get_distinct_slots_named_in_their_files(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    assert claim_slot(claims, "fleet-a") == 0
    assert claim_slot(claims, "fleet-b") == 1
    assert (claims / "slot-0").read_text() == "fleet-a\n"
    assert (claims / "slot-1").read_text() == "fleet-b\n"


def test_a_claimer_starting_again_gets_a_new_slot(tmp_path: Path) -> None:
    for claimer in ("fleet-a", "fleet-b", "fleet-a"):
        claim_slot(tmp_path, claimer)
    assert [(tmp_path / f"slot-{slot}").read_text() for slot in range(3)] == ["fleet-a\n", "fleet-b\n", "fleet-a\n"]


def test_a_nameless_slot_stays_taken(tmp_path: Path) -> None:
    (tmp_path / "slot-0").write_text("")  # its claimer died before writing its name
    assert claim_slot(tmp_path, "fleet-a") == 1


def test_threads_claiming_at_once_never_collide(tmp_path: Path) -> None:
    count = 24
    start = threading.Barrier(count)
    slots: dict[str, int] = {}

    def claim(claimer: str) -> None:
        start.wait()
        slots[claimer] = claim_slot(tmp_path, claimer)

    threads = [threading.Thread(target=claim, args=(f"thread-{n}",)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(slots.values()) == list(range(count))
    assert all((tmp_path / f"slot-{slot}").read_text() == f"{claimer}\n" for claimer, slot in slots.items())


def test_processes_claiming_at_once_never_collide(tmp_path: Path) -> None:
    count = 8
    with ProcessPoolExecutor(max_workers=count) as pool:
        slots = list(pool.map(claim_slot, [tmp_path] * count, [f"process-{n}" for n in range(count)]))
    assert sorted(slots) == list(range(count))


def test_the_run_takes_ids_seed_and_paths_from_its_slot(tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "slot-0").write_text("another-replica\n")
    arguments = ["--brokers", "4", "--seed", "10", "--claim-broker-ids", str(claims)]
    paths = ["--capture-dir", str(tmp_path / "capture"), "--report", str(tmp_path / "out" / "run.json")]
    plan = parse_run([*arguments, *paths], PROG)
    assert (plan.config.first_broker_id, plan.config.brokers, plan.config.seed) == (4, 4, 11)
    assert plan.config.capture_dir == tmp_path / "capture" / "slot-1"
    assert plan.report_path == tmp_path / "out" / "slot-1" / "run.json"
    assert plan.config.journal_path == tmp_path / "out" / "slot-1" / "run.journal.jsonl"
    assert plan.arguments["slot"] == 1 and plan.arguments["first_broker_id"] == 4
    assert (claims / "slot-1").read_text() == f"{socket.gethostname()}\n"
    again = parse_run([*arguments, "--first-broker-id", "100"], PROG)  # started again on this host
    assert (again.config.first_broker_id, again.config.seed) == (108, 12)


def test_without_a_claim_nothing_moves(tmp_path: Path) -> None:
    plan = parse_run(["--brokers", "4", "--seed", "10", "--report", str(tmp_path / "run.json")], PROG)
    assert (plan.config.first_broker_id, plan.config.seed, plan.report_path) == (0, 10, tmp_path / "run.json")
    assert "slot" not in plan.arguments


def test_an_unusable_claims_dir_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    assert run_command(["--claim-broker-ids", str(tmp_path / "file" / "claims")], PROG) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"{PROG}: error: --claim-broker-ids {tmp_path / 'file' / 'claims'}: cannot claim a slot")


def test_a_claimed_range_past_int32_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "slot-0").write_text("another-replica\n")
    arguments = ["--first-broker-id", str(2**31 - 3), "--brokers", "3", "--claim-broker-ids", str(tmp_path)]
    assert run_command(arguments, PROG) == 2
    assert "broker ids would pass 2147483647" in capsys.readouterr().err


def test_a_wildcard_listen_host_registers_this_hosts_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "fleet-7")
    monkeypatch.setattr(socket, "gethostbyname", {"fleet-7": "10.89.0.7"}.__getitem__)
    assert parse_run(["--listen-host", "0.0.0.0"], PROG).config.listen_host == "10.89.0.7"
    assert parse_run(["--listen-host", "10.1.2.3"], PROG).config.listen_host == "10.1.2.3"
    assert parse_run([], PROG).config.listen_host == "127.0.0.1"


def test_an_unresolvable_host_name_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unknown(name: str) -> str:
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "gethostbyname", unknown)
    assert run_command(["--listen-host", "0.0.0.0"], PROG) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--listen-host 0.0.0.0: this host's name does not resolve" in err

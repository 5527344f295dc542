"""The Makefile's benchmark and stress commands, each run by a test: a script nobody runs
crashes unnoticed (`make bench-core` did, for weeks).

Each test takes its target's command line from `make -n TARGET` (so the script path and flags are
the Makefile's, whatever it says tomorrow), changes only the size flags to the smallest meaningful
size, runs it as a subprocess with this interpreter from the repository root, its temporary files
under the test's own tmp dir (TMPDIR), and checks that it exits 0 and prints its figures: the table
headers and labels a reader relies on, and a number or two parsed from them (never a speed). Sizes
added for this:
bench-daemon's `--warm-up`, soak's `--minute-seconds`.

`make stress`, `make fsync-check` and `make fuzz` are already run by the tests named in `COVERAGE`:
they call the same `run`/`traced_run` the scripts' `main` calls, at a smaller size.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.daemon_process import ROOT

HERE = "tests/benchmarks/test_scripts.py"

#: make target -> the test that runs its command (the README's Commands table)
COVERAGE = {
    "bench": f"{HERE}::test_bench_codec",
    "bench-core": f"{HERE}::test_bench_core",
    "bench-log": f"{HERE}::test_bench_log",
    "bench-daemon": f"{HERE}::test_bench_daemon",
    "bench-failover": f"{HERE}::test_bench_failover",
    "bench-fleet": f"{HERE}::test_bench_fleet",
    "bench-analytics": f"{HERE}::test_bench_analytics",
    "bench-stalls": f"{HERE}::test_bench_stalls",
    "bench-scale": f"{HERE}::test_bench_scale",
    "soak": f"{HERE}::test_soak",
    # run in-process by the stress and fuzz tests (the function the script's main calls), not again here
    "stress": "tests/stress/test_kill9.py::test_acknowledged_changes_survive_sigkill",
    "fsync-check": "tests/stress/test_fsync_order.py::test_the_daemon_answers_only_after_its_log_is_fsynced",
    "fuzz": "tests/fuzz/test_fuzz_decode.py::test_short_fuzz_run_has_no_escapes",
    # its command line itself, at 40 frames of one set-up
    "fuzz-daemon": "tests/fuzz/test_fuzz_daemon.py::test_make_fuzz_daemon_runs_its_command_line_at_a_small_size",
    # on demand, about 30 s a mutant: its command line is checked (--help, `make -n`) and its pure
    # parts unit-tested there; a one-mutant run costs 16 CPU s, more than the suite's 2-core budget
    # spares for a tool nobody runs from `make test` (its last run's output is in the README)
    "mutation-fleet": "tests/benchmarks/test_mutation_fleet.py::test_the_script_runs_and_the_makefile_target_calls_it",
    # the same harness with the simulator as the judge: its command line checked the same way
    "mutation-sim": "tests/benchmarks/test_mutation_fleet.py::test_mutation_sim_judges_the_same_sample_by_simulation",
}


def make_command(target: str) -> list[str]:
    """The script and its arguments that `make TARGET` runs with the venv's python."""
    dry = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert dry.returncode == 0, dry.stderr
    runs = [shlex.split(line) for line in dry.stdout.splitlines() if line.startswith(".venv/bin/python ")]
    assert runs, f"make {target} runs no script with .venv/bin/python:\n{dry.stdout}"
    return runs[-1][1:]


def sized(target: str, **flags: str | bool) -> list[str]:
    """`make_command(target)` with `flags` (`minute_seconds="1"`: `--minute-seconds 1`) set or added."""
    command = make_command(target)
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            assert flag not in command
            command.append(flag)
        elif flag in command:
            command[command.index(flag) + 1] = str(value)
        else:
            command += [flag, str(value)]
    return command


def run_script(command: list[str], tmp_path: Path, timeout: float = 120) -> str:
    """Run `python SCRIPT ARGS...` as make does (from the repository root); its stdout, once it exited 0."""
    done = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, f"{shlex.join(command)} exited {done.returncode}\n{done.stdout}\n{done.stderr[-5000:]}"
    return done.stdout


def number(text: str) -> float:
    return float(text.replace(",", ""))


def find(pattern: str, output: str) -> re.Match[str]:
    found = re.search(pattern, output, re.M)
    assert found, f"no line matches {pattern!r} in:\n{output}"
    return found


def test_the_coverage_table_names_every_script_target_and_real_tests() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = re.findall(r"^([\w-]+):.*\n\t\$\(BIN\)/python (?:benchmarks|tests)/", makefile, re.M)
    assert sorted(targets) == sorted(COVERAGE)
    for nodeid in COVERAGE.values():
        path, name = nodeid.split("::")
        assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), nodeid


def test_bench_codec(tmp_path: Path) -> None:
    out = run_script(sized("bench", seconds="0.05"), tmp_path)
    assert "| message | bytes | fencer decode/s | kio decode/s | decode ratio |" in out
    rows = re.findall(
        r"^\| (AlterPartition|BrokerHeartbeat|LeaderAndIsr).* \*\*([\d.]+)x\*\* .* \*\*([\d.]+)x\*\* \|$", out, re.M
    )
    assert len(rows) == 6 and all(float(decode) > 0 and float(encode) > 0 for _, decode, encode in rows), out
    assert "| record batch | fencer | reference | ratio |" in out
    assert float(find(r"^\| record batch framing \+ CRC.* \*\*([\d.]+)x\*\* \|$", out)[1]) > 0
    assert float(find(r"^\| fencer compiled construct codec \| [\d,]+ \| \*\*([\d.]+)x\*\* \|$", out)[1]) > 0


def test_bench_core(tmp_path: Path) -> None:
    out = run_script(sized("bench-core", quick=True), tmp_path)
    assert "| measurement | result |" in out
    assert number(find(r"^\| AlterPartition through the core .* \| ([\d,]+) ops/s \|$", out)[1]) > 0
    assert number(find(r"^\| replay of decoded PartitionChangeRecords \| ([\d,]+) records/s \|$", out)[1]) > 0
    shutdown = find(r"^\| controlled shutdown of a broker leading ([\d,]+) partitions .*, ([\d,]+) records \|$", out)
    assert number(shutdown[1]) == 1000 and number(shutdown[2]) >= 1000  # a leader change per partition it led
    assert number(find(r"^\| start-up from a log of ([\d,]+) records \|", out)[1]) >= 100_000
    assert "| start-up from a snapshot of 10,000 partitions (RF 3," in out


def test_bench_log(tmp_path: Path) -> None:
    out = run_script(sized("bench-log", seconds="0.2", records="5000"), tmp_path)
    assert f"log under {tmp_path}" in out  # its scratch files are the test's
    assert "| append (fsync on) | records/s | batches/s (= fsyncs/s x groups per commit) |" in out
    for case in ("1 group of 1 record", "1 group of 50 records", "20 groups of 1 record"):
        assert number(find(rf"^\| {case} per commit \| ([\d,]+) \|", out)[1]) > 0
    assert "| start-up | records | open (recovery) | read + decode |" in out
    assert number(find(r"^\| ([\d,]+) records, batches of 50 \|", out)[1]) == 5001  # and the leader change


def test_bench_daemon(tmp_path: Path) -> None:
    out = run_script(sized("bench-daemon", seconds="0.5", rounds="1", connections="10", warm_up="0.2"), tmp_path)
    assert "10 connections, median of 1 interleaved rounds of 0.5 s" in out
    assert "| server | requests/s | p50 ms | p99 ms | mean group size | ratio | daemon CPU us/request |" in out
    assert number(find(r"^\| echo \| ([\d,]+) \|.* \| 1\.00x echo \| - \|$", out)[1]) > 0
    daemon = find(r"^\| daemon \| ([\d,]+) \| [\d.]+ \| [\d.]+ \| ([\d.]+) \| \*\*([\d.]+)x\*\* echo \| (\d+) \|$", out)
    assert number(daemon[1]) > 0 and float(daemon[2]) >= 1 and float(daemon[3]) > 0 and int(daemon[4]) > 0
    assert find(r"^\| capture \| [\d,]+ \|.* \| capture costs \*\*(-?[\d.]+)%\*\* \| \d+ \|$", out)
    assert out.rstrip().splitlines()[-1].startswith("Per round: daemon/echo ")


@pytest.mark.slow
def test_bench_failover(tmp_path: Path) -> None:
    """One kill at shorter quorum timeouts (500/1000 ms), then one short round of AlterPartition each side."""
    small = {"kills": "1", "brokers": "3", "topics": "1", "partitions": "3", "election_timeout_ms": "500"}
    small |= {"fetch_timeout_ms": "1000", "seconds": "0.5", "rounds": "1", "connections": "5", "warm_up": "0.2"}
    out = run_script(sized("bench-failover", **small), tmp_path, timeout=180)
    assert find(r"^## 1\. Failover: the leader of a 3-voter quorum SIGKILLed (\d+) times \(of 1 asked\)", out)[1] == "1"
    assert "| after a kill of the leader | measured | p50 ms | p99 ms | worst ms |" in out
    for label in ("new leader elected", "brokers served again"):
        assert number(find(rf"^\| {label} \| 1 \| ([\d,]+) \| [\d,]+ \| [\d,]+ \|$", out)[1]) > 0
    assert "final check of the quorum's 3 logs: 0 violation(s), 0 problem(s)" in out
    assert "| controller | requests/s | p50 ms | p99 ms | ratio |" in out
    assert number(find(r"^\| single node \| ([\d,]+) \|.* \| 1\.00x \|$", out)[1]) > 0
    quorum = find(r"^\| 3-voter quorum \| ([\d,]+) \| [\d.]+ \| [\d.]+ \| \*\*([\d.]+)x\*\* single \|$", out)
    assert number(quorum[1]) > 0 and float(quorum[2]) > 0
    assert out.rstrip().splitlines()[-1].startswith("Per round: quorum/single ")


def test_bench_fleet(tmp_path: Path) -> None:
    out = run_script(sized("bench-fleet", brokers="10", topics="2", partitions="5", seconds="4"), tmp_path)
    assert "\n10 brokers, " in out and "requests/s by API:" in out
    assert number(find(r"^  BrokerHeartbeat +([\d.]+)/s  controller latency p50", out)[1]) > 0
    assert number(find(r"^heartbeats (\d+): lateness p50 [\d.]+ ms, p99 [\d.]+ ms, worst", out)[1]) >= 10
    assert find(r"^violations: (\S+)$", out)[1] == "0"  # the checker ran and found nothing
    assert find(r"^CPU seconds: fleet [\d.]+, controller [\d.]+$", out)
    assert "largest fleet with every heartbeat on time: " in out  # 10, unless the machine is very busy


def test_bench_stalls(tmp_path: Path) -> None:
    # 2 x 9,999 partitions (a 256 KiB snapshot threshold, so that they make snapshots as 10 would at the default)
    out = run_script(sized("bench-stalls", topics="2", snapshot_bytes="262144"), tmp_path)
    assert "| phase | duration | /healthz asked | p50 ms | p99 ms | worst ms |" in out
    assert number(find(r"^\| idle \| 2\.0 s \| (\d+) \|", out)[1]) > 10
    assert find(r"^\| 2 creations \(and snapshots\) \| [\d.]+ s \| \d+ \|", out)
    assert number(find(r"^\| 3 x GET /state \((\d+) MiB\) \|", out)[1]) > 0
    assert number(find(r"^snapshots written: (\d+), the largest [\d.]+ MiB$", out)[1]) >= 1
    assert find(r"^daemon CPU during the creations: [\d.]+ s$", out)


def test_bench_scale(tmp_path: Path) -> None:
    out = run_script(
        sized(
            "bench-scale",
            topics="2",
            partitions_per_topic="500",
            tail="2000",
            rounds="1",
            settle="0.2",
            after="0.5",
            alter_seconds="0.5",
        ),
        tmp_path,
    )
    assert find(
        r"^scale: 1,000 partitions \(2 topics x 500, RF 3, 10 brokers\) in a snapshot, then 2,000 ISR changes", out
    )
    row = find(
        r"^\| 1 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d,]+) \| (-?[\d,]+) \| ([\d,]+) "
        r"\| ([\d,]+) \(([\d.]+)\) \| ([\d,]+) \(([\d.]+)\) \| ([\d.]+) \((\d+)\) \| ([\d.]+) \| (\d+) of (\d+) \|$",
        out,
    )
    listening, whole, read, replayed, log_replayed = (float(value) for value in row.groups()[:5])
    assert 0 < read + replayed + log_replayed <= whole + 0.015 and whole <= listening  # printed to 0.01 s each
    assert number(row[6]) > 10 and number(row[8]) >= number(row[6])  # MiB: once listening, then the peak
    assert find(r"^restart to listening: median [\d.]+ s .*: median -?[\d,]+ B/partition \(target 512\)$", out)
    assert all(number(row[index]) > 0 for index in (9, 10, 11, 12))  # AlterPartition/s and p99, image and empty
    assert find(r"^AlterPartition on the image: median [\d,]+/s against [\d,]+/s on an empty daemon, [\d.]+x", out)
    assert float(row[13]) > 0 and row[14] == "0" and float(row[15]) > 0  # broker 0's leaderships all moved
    assert int(row[16]) <= int(row[17])  # heartbeats timed out, of those answered
    failover = find(
        r"^\| 1 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| (\d+) of (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", out
    )
    elected, served, _, timed_out, answered, caught_up, rebuilt, _ = (float(value) for value in failover.groups())
    assert elected > 0 and served > 0 and timed_out <= answered and answered > 0 and 0 < caught_up <= rebuilt
    assert find(r"^failover of a 3-voter quorum \(leader SIGKILLed\): brokers served again a median [\d.]+ s", out)
    assert find(r"^a wiped voter caught up \(snapshot \+ tail\) in a median [\d.]+ s \(target 15 s\)", out)
    assert find(r"^controlled shutdown of broker 0, leading 100 partitions: answered in a median [\d.]+ s", out)


def test_soak(tmp_path: Path) -> None:
    out = run_script(sized("soak", minutes="3", minute_seconds="1"), tmp_path)
    assert "minute | RSS MiB | descriptors | data dir KiB | control requests received" in out
    minutes = re.findall(r"^ +(\d) \| +([\d.]+) \| +(\d+) \| +(\d+) \| ([\d,]+)$", out, re.M)
    assert [minute for minute, *_ in minutes] == ["1", "2", "3"], out
    assert all(float(rss) > 10 and int(fds) > 0 for _, rss, fds, _, _ in minutes)
    assert number(minutes[-1][4]) > 0  # the data brokers' control listeners got LeaderAndIsr
    assert number(find(r"^answered: alter ([\d,]+), create", out)[1]) > 0
    assert "soak passed (minutes of 1 s: the growth check not enforced)" in out


@pytest.mark.slow
def test_bench_analytics(tmp_path: Path) -> None:
    """The costliest: the shipped job's JVM and fixed costs, whatever the size (about 30 s here)."""
    out = run_script(sized("bench-analytics", exchanges="2000", rounds="1"), tmp_path, timeout=300)
    assert find(r"^capture: 2,000 exchanges, 1 parts, ", out)
    assert find(r"^  python -m analytics round 1: [\d.]+ s, [\d.]+ CPU s$", out)
    assert find(r"^  same-work baseline round 1: [\d.]+ s, [\d.]+ CPU s$", out)
    same_work = r"^same-work baseline, one Python process, no Spark \(every table and the report; capture dirs only, "
    assert number(find(same_work + r"no pcap reader\): [\d.]+ s \([\d.]+ CPU s\), ([\d,]+) exchanges/s$", out)[1]) > 0
    four_tables = r"^four-table baseline, kept for the record \(4 of the 17 tables, no report\): [\d.]+ s "
    assert number(find(four_tables + r"\([\d.]+ CPU s\), ([\d,]+) exchanges/s; the job is [\d.]+x it$", out)[1]) > 0
    # at this size the JVM's start-up is everything: the ratio is a few hundredths, but it prints
    shipped = r"^python -m analytics \(every table and the report, start-up included\): [\d.]+ s \(([\d.]+) CPU s\), "
    job = find(shipped + r"[\d,]+ exchanges/s, ([\d.]+)x the same-work baseline \(target >= 1.4x\)$", out)
    assert number(job[1]) > 0  # the CPU of its process tree, the JVM's included
    cpu = find(r"^CPU: the job spends ([\d.]+)x the same-work baseline's CPU; ", out)[1]
    # the last line: the ratios of the lines above, wall time the baseline's over the job's, CPU the job's over its
    assert out.rstrip().splitlines()[-1] == f"analytics: job vs same-work baseline {job[2]}x (CPU {cpu}x)"

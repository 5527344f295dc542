"""Every shell command the README and the docs show is run by a test, or a test shows what runs it.

The commands: every line of the `sh` blocks of README.md and of every page under docs/, every `$ `
line of their `console` blocks, the first column of the Commands page's table, and the commands
quoted inline in the README's Quick start and Help and on the Troubleshooting page. Each must match
an entry of `RUN_BY`, which names the test that runs it (or the same program with the same flags at
a smaller size) and says how; every entry must name a test that exists, and match a command the
README or the docs still show. The Quick start is run here as written (its ports and /tmp paths
swapped for free ones), and every `make TARGET` they name is a target whose recipe the named test
runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks.test_scripts import COVERAGE
from tests.e2e.daemon_process import free_port

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


#: README.md and every page of the docs, by path
DOCUMENTS = {"README.md": README} | {
    str(path.relative_to(ROOT)): path.read_text() for path in sorted(DOCS.rglob("*.md"))
}


def page(name: str) -> str:
    """The text of a page of the docs (`docs/NAME`), as read once above."""
    return DOCUMENTS[f"docs/{name}"]


COMMAND_WORDS = ("make ", "docker compose", ".venv/bin/", "python -m ", "apt-get ", "cp ", "ss ", "mkdir ", "curl ")

#: (a regular expression the whole command matches, the test that runs it, how)
RUN_BY: list[tuple[str, str, str]] = [
    # the opening
    (
        r"make demo( DEMO_SECONDS=10)?",
        "tests/broker_sim/test_demo.py::test_a_short_demo_end_to_end",
        "the demo's script, 10 s, analytics skipped (the Quick start runs the same job on the same inputs)",
    ),
    (
        r"make demo QUORUM=3",
        "tests/broker_sim/test_demo.py::test_a_short_demo_on_a_quorum",
        "the demo's script with --quorum 3, 10 s, analytics skipped (the same job as the demo above)",
    ),
    (
        r"make sim( SEEDS=\d+)?",
        "tests/broker_sim/sim/test_sim.py::test_make_sim_runs_its_seeds_and_reports_the_time",
        "the Makefile's command, two seeds",
    ),
    (
        r"\.venv/bin/python -m broker_sim sim --seeds \d+ .*",
        "tests/broker_sim/sim/test_sim.py::test_a_planted_bug_fails_its_seed_and_the_replay_command_replays_it",
        "the same command with a planted bug, and its replay line",
    ),
    (r"make test( PYTHON=python3)?", "tests/test_readme_commands.py::test_ci_runs_the_readme_test_command", ".ci/run"),
    (
        r"make docs",
        "tests/test_docs.py::test_make_docs_builds_the_docs_and_fails_on_a_broken_anchor",
        "the Makefile's recipe on a copy of the docs, and again with a broken anchor",
    ),
    # Quick start, run as written below
    # Safe to expose, run as written (ports and paths aside)
    (
        r"\.venv/bin/python examples/tls/mint\.py /tmp/secure/certs",
        "tests/e2e/test_examples_tls.py::test_the_secure_quick_start_runs_as_written",
        "as written",
    ),
    (
        r"\.venv/bin/python -m controller --data-dir /tmp/secure/data .*&",
        "tests/e2e/test_examples_tls.py::test_the_secure_quick_start_runs_as_written",
        "as written",
    ),
    (
        r"\.venv/bin/python examples/tls/allow_broker\.py 9095 /tmp/secure/certs",
        "tests/e2e/test_examples_tls.py::test_the_secure_quick_start_runs_as_written",
        "as written",
    ),
    (r"mkdir -p /tmp/fencer", "tests/test_readme_commands.py::test_the_quick_start_runs_as_written", "as written"),
    (
        r"\.venv/bin/python -m controller --data-dir /tmp/fencer/data .*&",
        "tests/test_readme_commands.py::test_the_quick_start_runs_as_written",
        "as written",
    ),
    (
        r"curl -s 127\.0\.0\.1:9094/healthz",
        "tests/test_readme_commands.py::test_the_quick_start_runs_as_written",
        "as written",
    ),
    (
        r"\.venv/bin/python -m broker_sim run --controller 127\.0\.0\.1:9093 .*",
        "tests/test_readme_commands.py::test_the_quick_start_runs_as_written",
        "as written",
    ),
    (r"kill %1 && wait", "tests/test_readme_commands.py::test_the_quick_start_runs_as_written", "as written"),
    # A quorum of controllers: the same flags, three daemons by hand, kio's DescribeQuorum, a SIGKILL
    (
        r"\.venv/bin/python -m controller --data-dir /tmp/q/1 --node-id 1 --listen 127\.0\.0\.1:19093 "
        r"--controller-quorum-voters \S+ --cluster-id \S+ --allow-unauthenticated-voters &",
        "tests/e2e/test_quorum.py::test_one_leader_the_others_redirect",
        "three daemons with these flags on free ports",
    ),
    (
        r"\.venv/bin/python -m broker_sim run --controller 127\.0\.0\.1:19093,127\.0\.0\.1:29093,127\.0\.0\.1:39093 .*",
        "tests/broker_sim/test_fleet_failover.py::test_a_dead_controller_first_in_the_list_is_passed_over",
        "a fleet given a list of controllers through the command line",
    ),
    (
        r"kill -9 %1",
        "tests/e2e/test_quorum.py::test_a_sigkilled_leader_is_replaced_and_rejoins_with_the_committed_log",
        "the leader SIGKILLed",
    ),
    (
        r"\.venv/bin/python -m analytics /tmp/fencer/capture .*",
        "tests/test_readme_commands.py::test_the_quick_start_runs_as_written",
        "as written",
    ),
    (
        r"\.venv/bin/python -m controller dump-log /tmp/fencer/data \| tail -3",
        "tests/test_readme_commands.py::test_the_quick_start_runs_as_written",
        "as written",
    ),
    # Docker compose: no container runtime in the suite; the commands are held to the compose file
    # (services, profiles, flags), and `make compose-smoke` runs the stack where one exists
    (
        r"docker compose( .*)?",
        "tests/deploy/test_compose_commands.py::test_the_documented_commands_match_the_compose_file",
        "checked against the file; run by make compose-smoke",
    ),
    (
        r"mkdir -p compose-output && chmod a\+rwx compose-output",
        "tests/deploy/test_compose_commands.py::test_the_documented_commands_match_the_compose_file",
        "prepares the analytics bind mount; make compose-smoke does the same",
    ),
    (
        r"make compose-smoke",
        "tests/deploy/test_compose_commands.py::test_make_compose_smoke_runs_the_script_and_stays_out_of_make_test",
        "its script checked; outside make test",
    ),
    # the Commands table
    # benchmarks, stress and fuzz: the Makefile's own command at a small size (tests/benchmarks)
    *[(re.escape(f"make {target}"), nodeid, "the Makefile's command, smaller") for target, nodeid in COVERAGE.items()],
    (
        r"make analyze( CAPTURE=.*)?",
        "tests/analytics/test_job.py::test_a_run_writes_every_table_the_report_and_prints_the_reports_path",
        "the job's main on capture dirs",
    ),
    (
        r"make check-kafka-dirs( KAFKA_DIRS=.*)?",
        "tests/kafka_dirs/test_adopt.py::test_make_check_kafka_dirs_adopts_a_kafka_shaped_data_dir",
        "the Makefile's command on a data dir in Kafka's shape the test writes; Kafka-written ones are not committed",
    ),
    (
        r"\.venv/bin/python -m controller \.\.\.",
        "tests/e2e/test_cli.py::test_bad_arguments_exit_2_with_one_line",
        "the daemon's command line",
    ),
    (
        r"\.venv/bin/python -m broker_sim run\\\|check\\\|sim \.\.\.",
        "tests/broker_sim/test_cli.py::test_the_final_check_runs_on_the_data_dir",
        "run, then check (sim: tests/broker_sim/sim/test_sim.py)",
    ),
    # A session
    (
        r"\.venv/bin/python -m controller --data-dir /tmp/fencer-demo .*&",
        "tests/e2e/test_example_session.py::test_the_example_session_does_what_it_prints_and_the_readme_shows",
        "a daemon with --metrics-listen",
    ),
    (
        r"\.venv/bin/python examples/session\.py 9093",
        "tests/e2e/test_example_session.py::test_the_example_session_does_what_it_prints_and_the_readme_shows",
        "as written, its port aside",
    ),
    (
        r"curl -s 127\.0\.0\.1:9094/(state|metrics)( \| grep fencer_requests_total)?",
        "tests/e2e/test_example_session.py::test_the_example_session_does_what_it_prints_and_the_readme_shows",
        "reads /state and /metrics",
    ),
    (
        r"kill %1; \.venv/bin/python -m controller dump-log /tmp/fencer-demo",
        "tests/controller/log/test_dump.py::test_python_dash_m_controller_dump_log",
        "dump-log on a data dir",
    ),
    # Analysing a tcpdump of a real cluster
    (
        r"tcpdump -i any -s 0 (.* )?-w \S+\.pcap 'tcp port 909[23]( or tcp port 909[23])?'",
        "tests/pcap/test_tcpdump.py::test_a_real_tcpdump_capture_gives_the_exchanges_exactly",
        "tcpdump -i any and -i lo with -s 0 on the loopback, the test's own port in the filter",
    ),
    (
        r"python -m analytics controller\.pcap .* --out analysis --kafka-port 9093",
        "tests/analytics/test_pcap_job.py::test_a_pcap_of_a_fleet_run_gives_the_exchanges_the_daemon_captured",
        "the job on a tcpdump of a fleet run with --kafka-port (the pipeline's run, on the shared session)",
    ),
    # Analytics with spark-submit
    (
        r"\.venv/bin/python -m zipfile -c /tmp/fencer\.zip protocol analytics",
        "tests/analytics/test_cluster.py::test_the_job_on_a_standalone_cluster_writes_what_a_local_run_writes",
        "as written",
    ),
    (
        r"PYSPARK_PYTHON=\S+ \S*spark-submit --master 'local\[2\]' .*",
        "tests/analytics/test_cluster.py::test_the_job_on_a_standalone_cluster_writes_what_a_local_run_writes",
        "local[2], the project as a zip; a driver script that also says where it imported it from",
    ),
    (
        r"PYSPARK_PYTHON=\S+ spark-submit --master spark://HOST:7077 .*",
        "tests/analytics/test_cluster.py::test_the_job_on_a_standalone_cluster_writes_what_a_local_run_writes",
        "the same, on a standalone cluster the test starts on 127.0.0.1 (a master, two workers), held to a local run",
    ),
    # Troubleshooting
    (
        r"apt-get install openjdk-17-jre-headless",
        "tests/test_readme_commands.py::test_ci_runs_the_readme_test_command",
        ".ci/run installs it when java is missing",
    ),
    (
        r"python -m controller dump-log DIR",
        "tests/controller/log/test_dump.py::test_python_dash_m_controller_dump_log",
        "dump-log on a data dir",
    ),
    (
        r"cp -a DIR DIR\.bak",
        "tests/e2e/test_cli.py::test_a_corrupt_batch_mid_log_refuses_to_start_until_repair_log_truncates_there",
        "the refusal leaves the log untouched, so a copy can be taken; cp is the user's",
    ),
    (
        r"ss -ltnp",
        "tests/e2e/test_cli.py::test_a_port_in_use_exits_1_with_one_line_naming_the_flag_and_address",
        "the refusal it helps with; ss is the system's",
    ),
    (
        r"make test PYTHON=python3",
        "tests/test_readme_commands.py::test_ci_runs_the_readme_test_command",
        ".ci/run passes PYTHON",
    ),
]


def section(heading: str, text: str = README, where: str = "README.md") -> str:
    match = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    assert match is not None, f"{where} has no '## {heading}' section"
    return match.group(1)


def block_commands(text: str) -> list[str]:
    """The commands of the `sh` and `console` blocks of a Markdown text, one per logical line,
    comments dropped."""
    commands = []
    for kind, body in re.findall(r"```(sh|console)\n(.*?)```", text, flags=re.DOTALL):
        for line in body.replace("\\\n", " ").splitlines():
            if kind == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(" ".join(line.split()))
    return commands


def inline_commands(text: str) -> list[str]:
    spans = re.findall(r"(?<!`)`([^`\n]+)`(?!`)", text)
    return [span.strip() for span in spans if span.strip().startswith(COMMAND_WORDS)]


def readme_commands() -> list[str]:
    """The commands of the README and the docs (see the module's rules), each once."""
    table = re.findall(r"^\| `([^`]+)` \|", page("operations/commands.md"), flags=re.MULTILINE)
    found = [command for text in DOCUMENTS.values() for command in block_commands(text)]
    found += [*table, *inline_commands(section("Quick start")), *inline_commands(section("Help"))]
    found += inline_commands(page("operations/troubleshooting.md"))
    return list(dict.fromkeys(found))


def test_the_readme_shows_commands_in_every_place_read() -> None:
    commands = readme_commands()
    assert "make demo" in commands and "make test" in commands and len(commands) > 30


def test_every_command_is_run_by_a_named_test() -> None:
    uncovered = [c for c in readme_commands() if not any(re.fullmatch(p, c) for p, _, _ in RUN_BY)]
    assert uncovered == []


def test_every_entry_still_matches_a_command_the_readme_shows() -> None:
    commands = readme_commands()
    assert [p for p, _, _ in RUN_BY if not any(re.fullmatch(p, c) for c in commands)] == []


@pytest.mark.parametrize("nodeid", sorted({nodeid for _, nodeid, _ in RUN_BY}))
def test_every_named_test_exists(nodeid: str) -> None:
    path, name = nodeid.split("::")
    source = (ROOT / path).read_text()
    assert re.search(rf"^(async )?def {re.escape(name)}\(", source, flags=re.MULTILINE), nodeid


def make_recipe(target: str) -> str:
    """What `make TARGET` runs (a dry run, the venv taken as installed)."""
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "-o", ".venv/.installed", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    "command", sorted({c.split()[1] for c in readme_commands() if c.startswith("make ") and "=" not in c.split()[1]})
)
def test_every_make_target_runs_what_its_test_runs(command: str) -> None:
    """The named test runs the target's script or module, the link between the two."""
    recipe = make_recipe(command if command != "analyze" else "analyze")
    (nodeid,) = {n for p, n, _ in RUN_BY if re.fullmatch(p, f"make {command}")}
    source = (ROOT / nodeid.split("::")[0]).read_text()
    programs = re.findall(r"(?:benchmarks|tests/\w+)/(\w+)\.py|-m ([\w.]+)|deploy/([\w-]+)\.sh|(\.ci/run)", recipe)
    assert programs, recipe
    # the test names the program, or takes the target's own command from `make -n TARGET`
    names = {name for found in programs for name in found if name} | {f'"{command}"'}
    assert {name for name in names if name in source}, (command, names, nodeid)


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run installs what the tests need (Java among them) and runs `make test` with PYTHON."""
    script = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test PYTHON=", script, flags=re.MULTILINE)
    assert "openjdk-17-jre-headless" in script
    assert "lint typecheck pytest" in make_recipe("test") or "pytest" in make_recipe("test")


def as_written_script(commands: list[str], readme_tmp: str, tmp: Path, ports: dict[int, int]) -> str:
    """`commands` as one bash script: `readme_tmp` and the README's ports swapped for `tmp` and free
    ones, and after a command put in the background, a wait for its first line (`listening on ...`),
    as a person waits for it before typing the next command."""
    python = ".venv/bin/python" if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
    lines = []
    for number, command in enumerate(commands):
        command = command.replace(readme_tmp, str(tmp)).replace(".venv/bin/python", python)
        for readme_port, port in ports.items():
            command = command.replace(f"127.0.0.1:{readme_port}", f"127.0.0.1:{port}")
            command = re.sub(rf"(?<=\s){readme_port}(?=\s)", str(port), command)  # a bare port argument
        if command.endswith("&"):
            out = tmp / f"background-{number}.out"
            lines.append(f"{command[:-1].strip()} > {out} 2> {out}.stderr &")
            lines.append(f"for _ in $(seq 300); do grep -q '^listening on' {out} 2>/dev/null && break; sleep 0.1; done")
            lines.append(f"cat {out}")
        else:
            lines.append(command)
    return "set -e\n" + "\n".join(lines) + "\n"


def quick_start_script(tmp: Path, ports: dict[int, int]) -> str:
    """The Quick start's blocks, as written (`as_written_script`)."""
    return as_written_script(block_commands(section("Quick start")), "/tmp/fencer", tmp, ports)


@pytest.mark.slow
def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    ports = {9093: free_port(), 9094: free_port()}  # the README's, free ones in their place
    tmp = tmp_path / "fencer"
    script = quick_start_script(tmp, ports)
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=300)
    finally:  # the script and whatever it left running (its own process group), if any is left
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == 0, f"{script}\n{stdout[-3000:]}\n{stderr[-3000:]}"
    lines = stdout.splitlines()
    assert f"listening on 127.0.0.1:{ports[9093]}" in lines
    assert "ok" in lines  # /healthz
    verdict = r"run finished in [\d.]+s: 0 violation\(s\), final check of .*: 0 violation\(s\); exit status 0"
    assert any(re.fullmatch(verdict, line) for line in lines), stdout[-3000:]
    assert f"report: {tmp}/analysis/report.html" in lines
    page = (tmp / "analysis" / "report.html").read_text()
    assert len(page) > 10_000 and "<h2>What the fleet did (its journals)</h2>" in page
    assert "No journal given" not in page  # the journal beside the fleet's report was read
    assert any("offset:" in line for line in lines[-3:]), lines[-3:]  # dump-log's last records

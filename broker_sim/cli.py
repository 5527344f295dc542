"""The fleet's command line.

    python -m broker_sim run [OPTIONS]     a fleet run; `fencer-fleet [OPTIONS]` is the same command
    python -m broker_sim check DATA_DIR [--journal PATH] [--report PATH]
                                           the invariant checker alone (the checker's own command line)
    python -m broker_sim sim --seeds N [OPTIONS]
                                           the whole cluster under simulation (`broker_sim.sim.cli`)

Rules:
- Bad arguments exit 2 with one line on stderr (`<prog>: error: <why>`), never a traceback, and
  before anything starts: besides each option's own type, a replication factor over the broker
  count, more processes than brokers, a heartbeat interval not below the session timeout, broker
  ids past Kafka's int32, and a `--data-dir` that is not a directory are refused.
- The journal: `--journal PATH`; else beside the report (`run.json` -> `run.journal.jsonl`);
  else in the capture dir (`journal.jsonl`, which capture readers skip); else, when `--data-dir`
  asks for the final check, a temporary file removed after it; else none.
- `--claim-broker-ids DIR` (replicas of one command, e.g. `docker compose up --scale fleet=3`):
  after the arguments are checked, the replica claims slot k in DIR (`broker_sim.shell.claims`) and
  runs as if given `--first-broker-id I + k * N` (N: `--brokers`) and `--seed S + k` (topic names
  carry the seed, so each replica's topics are its own), with its capture dir, report and journal
  one `slot-k` directory further down (`run.json` -> `slot-k/run.json`). The report's arguments
  are the ones the replica ran with, and its slot.
- `--listen-host`: the brokers' control listeners bind to it and register it as their address, so
  the controller must reach it. A wildcard (0.0.0.0, ::) stands for this host's own address (what
  its hostname resolves to): the one other containers of a compose network reach it at.
- `--controller HOST:PORT[,HOST:PORT...]`: one controller, or the controllers of a quorum in the
  order to try them. Every connection starts at the first and moves to the next on
  NOT_CONTROLLER or a broken connection (`broker_sim.shell.connection`); one address behaves as
  before the list existed. An address listed twice is refused.
- `--quorum N --quorum-data-dir DIR`: the fleet starts N controllers of its own
  (`broker_sim.shell.quorum`: DIR/node-i each, a proxy per ordered pair of them, one cluster id
  drawn from the seed, the run's session timeout, `--quorum-election-timeout-ms` and
  `--quorum-fetch-timeout-ms`), runs against them and checks every node's dir at the end. It takes
  the place of `--controller` and `--data-dir` (refused beside it), runs in one process (refused
  with `--processes` above 1, and with `--claim-broker-ids`), and wants a DIR that holds no node's
  dir yet (a new run on an old log would be judged by its new journal). The
  `controller-failover` scenario needs it. `--controller-module MODULE` and `--controller-args
  ARGS` (hidden: for tests) run another entry point in place of `controller`, with more arguments
  (a planted bug).
- `--tls-cert PATH --tls-key PATH --tls-ca PATH`, all three or none: the fleet's
  connections to the controller(s) are TLS, presenting that certificate and verifying the
  controller's against the CA (its name: the `--controller` host), and the brokers' control
  listeners are TLS-only, requiring a client certificate from the CA, registered as SSL
  (`broker_sim.shell.tls`). The files are checked before anything starts (one line naming the flag
  and the file). With `--quorum`, every node of the fleet's quorum serves TLS with the same three
  files (so the fleet's certificate must also name 127.0.0.1, the nodes' host), its Raft links
  included, and the fleet's DescribeQuorum and vote probes speak TLS to them.
- `check` is the checker's (`broker_sim.check.cli.main`), imported when it is asked for; `sim` the
  simulator's (`broker_sim.sim.cli.main`), likewise (it imports the controller).
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import shlex
import socket
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, NoReturn

from broker_sim.model.quorum import QuorumTiming, cluster_id
from broker_sim.model.schedule import QUORUM_SCENARIOS
from broker_sim.report import EXIT_INTERRUPTED
from broker_sim.shell.claims import claim_slot
from broker_sim.shell.fleet import ALL_SCENARIOS, FleetConfig
from broker_sim.shell.quorum import QuorumPlan
from broker_sim.shell.run import RunPlan, execute
from broker_sim.shell.tls import FleetTls, TlsError
from protocol.arguments import host_port, non_negative_int, positive_int

CONSOLE_PROG = "fencer-fleet"
MODULE_PROG = "python -m broker_sim"
LARGEST_BROKER_ID = 2**31 - 1
_DEFAULTS = {item.name: item.default for item in fields(FleetConfig)}
#: Wildcard listen hosts: a registered address must be one a controller can dial, so the brokers bind
#: and register this host's own (IPv4) address instead, the one its name resolves to.
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
DEFAULT_CONTROLLER = (("127.0.0.1", 9093),)
LARGEST_QUORUM = 9


class UsageError(Exception):
    """Bad arguments: the message is the one line the user sees."""


class CommandLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise `UsageError` (one line, exit 2 for the caller)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def controller_list(text: str) -> tuple[tuple[str, int], ...]:
    """HOST:PORT[,HOST:PORT...]: the controllers, in the order to try them; each as `host_port`."""
    addresses = tuple(host_port(item) for item in text.split(","))
    for index, address in enumerate(addresses):
        if address in addresses[:index]:
            raise argparse.ArgumentTypeError(f"{address[0]}:{address[1]} is listed twice in {text!r}")
    return addresses


def positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return seconds


def build_run_parser(prog: str) -> CommandLineParser:
    parser = CommandLineParser(prog=prog, description="a fleet of simulated Kafka brokers driving a fencer controller")
    add = parser.add_argument
    add(
        "--controller",
        type=controller_list,
        default=None,
        metavar="HOST:PORT[,HOST:PORT...]",
        help="the controller, or a quorum's controllers in the order to try them (default 127.0.0.1:9093)",
    )
    add("--brokers", type=positive_int, default=_DEFAULTS["brokers"], metavar="N", help="brokers in this fleet")
    add("--first-broker-id", type=non_negative_int, default=0, metavar="I", help="ids are I..I+N-1 (default 0)")
    add("--topics", type=non_negative_int, default=_DEFAULTS["topics"], metavar="T", help="topics to create")
    add("--partitions", type=positive_int, default=_DEFAULTS["partitions"], metavar="P", help="per topic")
    add("--replication-factor", type=positive_int, default=_DEFAULTS["replication_factor"], metavar="R")
    add("--duration", type=positive_seconds, default=_DEFAULTS["duration_s"], metavar="SECONDS")
    add("--seed", type=int, default=0, metavar="S", help="the same seed and arguments replay the same schedule")
    add("--scenario", choices=ALL_SCENARIOS, default=_DEFAULTS["scenario"])
    add("--heartbeat-ms", type=positive_int, default=_DEFAULTS["heartbeat_ms"], metavar="MS")
    add(
        "--session-timeout-ms",
        type=positive_int,
        default=_DEFAULTS["session_timeout_ms"],
        metavar="MS",
        help="the controller's session timeout, so pauses exceed it (default 9000)",
    )
    add("--capture-dir", type=Path, metavar="PATH", help="capture the brokers' traffic (the daemon's format)")
    add("--report", type=Path, metavar="PATH", help="write the run's report (JSON)")
    add("--journal", type=Path, metavar="PATH", help="the run's journal (default: beside the report)")
    add("--data-dir", type=Path, metavar="PATH", help="the controller's data dir: check its log at the end")
    add("--processes", type=positive_int, default=1, metavar="K", help="spread the brokers over K OS processes")
    add(
        "--claim-broker-ids",
        type=Path,
        metavar="DIR",
        help="claim a slot k in DIR shared with other replicas: ids, seed and paths offset by k",
    )
    add(
        "--listen-host",
        default=_DEFAULTS["listen_host"],
        metavar="HOST",
        help="the brokers' control listeners bind and register here (0.0.0.0: this host's address)",
    )
    add("--quorum", type=positive_int, metavar="N", help="start N controllers of the fleet's own and run against them")
    add("--quorum-data-dir", type=Path, metavar="DIR", help="the quorum's data dirs (DIR/node-i) and logs")
    add(
        "--quorum-election-timeout-ms",
        type=positive_int,
        default=1000,
        metavar="MS",
        help="the quorum's controller.quorum.election.timeout.ms (default 1000)",
    )
    add(
        "--quorum-fetch-timeout-ms",
        type=positive_int,
        default=2000,
        metavar="MS",
        help="the quorum's controller.quorum.fetch.timeout.ms (default 2000)",
    )
    add("--tls-cert", type=Path, metavar="PATH", help="TLS: the fleet's certificate (PEM), presented both ways")
    add("--tls-key", type=Path, metavar="PATH", help="TLS: the key of --tls-cert (PEM)")
    add("--tls-ca", type=Path, metavar="PATH", help="TLS: the CA that issued the controller's and the fleet's")
    add("--controller-module", default="controller", help=argparse.SUPPRESS)
    add("--controller-args", default="", help=argparse.SUPPRESS)
    return parser


def parse_run(argv: Sequence[str], prog: str) -> RunPlan:
    """The plan of a run from its arguments; raises `UsageError`."""
    args = build_run_parser(prog).parse_args(argv)
    _validate(args)
    tls = _tls(args)
    if args.controller is None and args.quorum is None:
        args.controller = DEFAULT_CONTROLLER
    if args.claim_broker_ids is not None:
        args = in_slot(args, _claim(args.claim_broker_ids))
        _validate(args)
    journal, temporary = _journal_path(args)
    (host, port), *others = args.controller or DEFAULT_CONTROLLER
    config = FleetConfig(
        controller_host=host,
        controller_port=port,
        other_controllers=tuple(others),
        brokers=args.brokers,
        first_broker_id=args.first_broker_id,
        topics=args.topics,
        partitions=args.partitions,
        replication_factor=args.replication_factor,
        duration_s=args.duration,
        seed=args.seed,
        scenario=args.scenario,
        heartbeat_ms=args.heartbeat_ms,
        session_timeout_ms=args.session_timeout_ms,
        capture_dir=args.capture_dir,
        journal_path=journal,
        listen_host=advertised_host(args.listen_host),
        tls=tls,
    )
    return RunPlan(config, args.processes, args.report, args.data_dir, temporary, _arguments(args), _quorum(args, tls))


def _tls(args: argparse.Namespace) -> FleetTls | None:
    """The fleet's TLS, its files checked (a context of each kind built and dropped), or None."""
    given = {"--tls-cert": args.tls_cert, "--tls-key": args.tls_key, "--tls-ca": args.tls_ca}
    if all(path is None for path in given.values()):
        return None
    missing = [flag for flag, path in given.items() if path is None]
    if missing:
        raise UsageError(f"TLS needs --tls-cert, --tls-key and --tls-ca together: {', '.join(missing)} missing")
    tls = FleetTls(args.tls_cert, args.tls_key, args.tls_ca)
    try:
        tls.contexts()
    except TlsError as error:
        raise UsageError(str(error)) from error
    return tls


def _quorum(args: argparse.Namespace, tls: FleetTls | None = None) -> QuorumPlan | None:
    if args.quorum is None:
        return None
    return QuorumPlan(
        nodes=args.quorum,
        data_dir=args.quorum_data_dir,
        cluster_id=cluster_id(args.seed),
        session_timeout_ms=args.session_timeout_ms,
        timing=QuorumTiming(args.quorum_election_timeout_ms / 1000, args.quorum_fetch_timeout_ms / 1000),
        module=args.controller_module,
        extra_args=tuple(shlex.split(args.controller_args)),
        tls=tls,
    )


def _validate(args: argparse.Namespace) -> None:
    if args.replication_factor > args.brokers:
        raise UsageError(f"--replication-factor {args.replication_factor} exceeds --brokers {args.brokers}")
    if args.processes > args.brokers:
        raise UsageError(f"--processes {args.processes} exceeds --brokers {args.brokers} (one broker at least each)")
    if args.heartbeat_ms >= args.session_timeout_ms:
        raise UsageError(
            f"--heartbeat-ms {args.heartbeat_ms} must be below --session-timeout-ms {args.session_timeout_ms}"
        )
    if args.first_broker_id + args.brokers - 1 > LARGEST_BROKER_ID:
        raise UsageError(f"broker ids would pass {LARGEST_BROKER_ID} (--first-broker-id + --brokers)")
    if args.data_dir is not None and not args.data_dir.is_dir():
        raise UsageError(f"--data-dir {args.data_dir} is not a directory")
    for option, path in (("--report", args.report), ("--journal", args.journal)):
        if path is not None and path.is_dir():
            raise UsageError(f"{option} {path} is a directory")
    if args.capture_dir is not None and args.capture_dir.exists() and not args.capture_dir.is_dir():
        raise UsageError(f"--capture-dir {args.capture_dir} is not a directory")
    _validate_quorum(args)


def _validate_quorum(args: argparse.Namespace) -> None:
    if args.quorum is None:
        if args.quorum_data_dir is not None:
            raise UsageError("--quorum-data-dir needs --quorum")
        if args.scenario in QUORUM_SCENARIOS:
            raise UsageError(f"--scenario {args.scenario} needs --quorum (the fleet's own controllers to fault)")
        return
    if args.quorum > LARGEST_QUORUM:
        raise UsageError(f"--quorum {args.quorum}: at most {LARGEST_QUORUM} controllers")
    if args.quorum_data_dir is None:
        raise UsageError("--quorum needs --quorum-data-dir")
    for option, given in (
        ("--controller", args.controller is not None),
        ("--data-dir", args.data_dir is not None),
        ("--claim-broker-ids", args.claim_broker_ids is not None),
        ("--processes", args.processes > 1),
    ):
        if given:
            raise UsageError(f"--quorum runs the fleet in one process against its own controllers: drop {option}")
    directory = args.quorum_data_dir
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--quorum-data-dir {directory} is not a directory")
    for node in range(1, args.quorum + 1):
        if (directory / f"node-{node}").exists():
            raise UsageError(f"--quorum-data-dir {directory} already holds node-{node}: give a new or empty directory")


def _claim(directory: Path) -> int:
    try:
        return claim_slot(directory)
    except OSError as error:
        raise UsageError(f"--claim-broker-ids {directory}: cannot claim a slot ({error.strerror or error})") from error


def in_slot(args: argparse.Namespace, slot: int) -> argparse.Namespace:
    """The arguments of the replica holding `slot`: the next `--brokers` ids after the slots below
    it, its own seed (so its own topic names), and its paths one `slot-k` directory down."""

    def down(path: Path | None, *, directory: bool = False) -> Path | None:
        if path is None:
            return None
        return path / f"slot-{slot}" if directory else path.parent / f"slot-{slot}" / path.name

    return argparse.Namespace(
        **{
            **vars(args),
            "slot": slot,
            "first_broker_id": args.first_broker_id + slot * args.brokers,
            "seed": args.seed + slot,
            "capture_dir": down(args.capture_dir, directory=True),
            "report": down(args.report),
            "journal": down(args.journal),
        }
    )


def advertised_host(host: str) -> str:
    """The host the brokers listen on and register: `host`, or this host's address for a wildcard."""
    if host not in WILDCARD_HOSTS:
        return host
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError as error:
        raise UsageError(f"--listen-host {host}: this host's name does not resolve ({error})") from error


def _journal_path(args: argparse.Namespace) -> tuple[Path | None, bool]:
    """The run's journal, and whether it is a temporary one (for the final check only)."""
    if args.journal is not None:
        return args.journal, False
    if args.report is not None:
        return args.report.with_suffix(".journal.jsonl"), False
    if args.capture_dir is not None:
        return args.capture_dir / "journal.jsonl", False
    if args.data_dir is not None:
        return Path(tempfile.gettempdir()) / f"fencer-fleet-{os.getpid()}.journal.jsonl", True
    return None, False


def _arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments as the report records them (JSON values)."""
    recorded: dict[str, Any] = {}
    for name, value in sorted(vars(args).items()):
        if isinstance(value, Path):
            value = str(value)
        elif name == "controller" and value is not None:
            value = ",".join(f"{host}:{port}" for host, port in value)
        recorded[name] = value
    return recorded


def run_command(argv: Sequence[str], prog: str) -> int:
    """The `run` command (and `fencer-fleet`): the exit status."""
    try:
        plan = parse_run(argv, prog)
    except UsageError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except SystemExit as exit_:  # --help
        return exit_.code if isinstance(exit_.code, int) else 0
    try:
        return execute(plan, prog=prog)
    except KeyboardInterrupt:  # a second Ctrl-C, after the fleet stopped (e.g. during the final check)
        return EXIT_INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m broker_sim COMMAND ...`: the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    command, rest = (arguments[0], arguments[1:]) if arguments else ("", [])
    if command == "run":
        return run_command(rest, f"{MODULE_PROG} run")
    if command == "check":
        checker = importlib.import_module("broker_sim.check.cli")  # the checker's own command line
        status: int = checker.main(rest)
        return status
    if command == "sim":
        simulator = importlib.import_module("broker_sim.sim.cli")  # the simulator: controllers in this process
        sim_status: int = simulator.main(rest)
        return sim_status
    if command in ("-h", "--help"):
        print(f"usage: {MODULE_PROG} run [OPTIONS] | check DATA_DIR [--journal PATH] [--report PATH]")
        print("  run: a fleet run (`run --help` lists its options; `fencer-fleet` is the same command)")
        print("  check: the invariant checker alone, on a controller's data dir and a run's journal")
        print("  sim: the whole cluster under deterministic simulation (`sim --help`)")
        return 0
    print(f"{MODULE_PROG}: error: expected a command, run, check or sim (got {command or 'none'!r})", file=sys.stderr)
    return 2


def console() -> None:
    """The `fencer-fleet` console script: the `run` command."""
    sys.exit(run_command(sys.argv[1:], CONSOLE_PROG))

"""The daemon's command line: `python -m controller --data-dir PATH [--listen HOST:PORT] ...`.

Rules: bad arguments exit 2 with one line on stderr (unusable TLS files too, checked before
anything is opened or listens); an unusable data dir (wrong cluster id,
corrupt log, not a directory) exits 1 naming the problem; SIGTERM/SIGINT drain and exit 0.
Once the listener accepts connections, one line `listening on HOST:PORT` goes to stdout.
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
from pathlib import Path

import trio

from protocol.arguments import listen_address, non_negative_int, positive_int

from .. import collector
from ..auth.principal_mapping import MappingRulesError, parse_rules
from ..control.tls import client_context
from ..engine import DEFAULT_SNAPSHOT_BYTES, ControllerEngine
from ..log import LogError
from ..log.retention import DEFAULT_RETENTION_BYTES
from ..log.store import DEFAULT_SEGMENT_BYTES
from ..ops.authorization import authorizer_config
from ..startup import replay_whole_log
from ..state.controller_state import ControllerConfig
from ..stopping import find_failure
from . import logging_config
from .daemon import Daemon, DaemonOptions
from .heartbeat_deadlines import DEFAULT_HEARTBEAT_INTERVAL_MS
from .listen import ListenError
from .quorum_config import (
    DEFAULT_ELECTION_TIMEOUT_MS,
    DEFAULT_FETCH_TIMEOUT_MS,
    QuorumConfig,
    QuorumConfigError,
    check_voter_authentication,
    parse_voter_principal,
    quorum_config,
)
from .tls import DEFAULT_HANDSHAKE_TIMEOUT_MS, TlsConfigError, TlsOptions, certificate_principal, server_context

log = logging.getLogger("fencer.cli")
#: How long the event loop may hold the GIL while the commit thread waits for it (default 5 ms).
SWITCH_INTERVAL_S = 0.0002


def voter_principal(text: str) -> tuple[int, str]:
    try:
        return parse_voter_principal(text)
    except QuorumConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # A declarative table, one flag per statement: long because the daemon has many flags.
    parser.add_argument(
        "--listen",
        type=listen_address,
        default=("127.0.0.1", 9093),
        metavar="HOST:PORT",
        help="address of the Kafka listener (default 127.0.0.1:9093; port 0 picks one)",
    )
    parser.add_argument("--data-dir", type=Path, metavar="PATH", help="metadata log directory (formatted on first use)")
    parser.add_argument("--cluster-id", help="cluster id to format a new data dir with, or to insist on")
    parser.add_argument("--node-id", type=non_negative_int, default=1, help="controller id (default 1)")
    parser.add_argument("--session-timeout-ms", type=positive_int, default=9000, help="broker session timeout")
    parser.add_argument(
        "--broker-heartbeat-interval-ms",
        type=positive_int,
        default=DEFAULT_HEARTBEAT_INTERVAL_MS,
        help="the brokers' heartbeat interval (Kafka's broker.heartbeat.interval.ms): a heartbeat not decided "
        "within half of it is answered REQUEST_TIMED_OUT, its session kept (default %(default)s)",
    )
    parser.add_argument(
        "--controller-quorum-voters",
        metavar="ID@HOST:PORT,...",
        help="the controller quorum (Kafka's controller.quorum.voters); --node-id names this node's entry and "
        "--listen must be its address (default: this node alone)",
    )
    parser.add_argument(
        "--controller-quorum-election-timeout-ms",
        type=positive_int,
        default=DEFAULT_ELECTION_TIMEOUT_MS,
        help="a voter that hears of no leader stands for election after this plus a random part of it (default 1000)",
    )
    parser.add_argument(
        "--controller-quorum-fetch-timeout-ms",
        type=positive_int,
        default=DEFAULT_FETCH_TIMEOUT_MS,
        help="a follower that cannot fetch from its leader this long starts an election; a leader without a "
        "majority's fetches for 1.5 times it resigns (default 2000)",
    )
    parser.add_argument(
        "--controller-quorum-voter-principal",
        type=voter_principal,
        action="append",
        default=[],
        metavar="ID=PRINCIPAL",
        help="voter ID's principal (repeat per voter, e.g. 2=User:CN=controller-2): a Raft request counts for "
        "voter ID only on a connection with that principal; default: the principal of the certificate voter "
        "ID's listener presents (needs --tls-ca)",
    )
    parser.add_argument(
        "--allow-unauthenticated-voters",
        action="store_true",
        help="run a quorum of several voters without client certificates: anyone who reaches a voter's "
        "listener can then act as a voter (fetch as a follower, vote, claim leadership)",
    )
    parser.add_argument(
        "--tls-cert",
        type=Path,
        metavar="PATH",
        help="PEM certificate (chain) of the Kafka listener: with --tls-key, --listen is TLS-only (TLS 1.2+)",
    )
    parser.add_argument("--tls-key", type=Path, metavar="PATH", help="PEM private key of --tls-cert")
    parser.add_argument(
        "--tls-ca",
        type=Path,
        metavar="PATH",
        help="PEM CA certificate(s): clients must present a certificate issued by it (Kafka's "
        "ssl.client.auth=required); without a certificate, or with another CA's, they are closed unanswered",
    )
    parser.add_argument(
        "--tls-handshake-timeout-ms",
        type=positive_int,
        default=DEFAULT_HANDSHAKE_TIMEOUT_MS,
        metavar="N",
        help="close a connection whose TLS handshake has not finished after this long (default 10000)",
    )
    parser.add_argument(
        "--ssl-principal-mapping-rules",
        default="DEFAULT",
        metavar="RULES",
        help="Kafka's ssl.principal.mapping.rules: how a client certificate's subject becomes the principal's "
        "name (RULE:pattern/replacement/[LU], comma-separated, DEFAULT: the subject as Java prints it)",
    )
    parser.add_argument(
        "--authorizer",
        choices=("standard",),
        help="authorize every request as Kafka's StandardAuthorizer does, with the ACLs in the metadata log "
        "(CreateAcls/DescribeAcls/DeleteAcls); default: no authorizer, the ACL APIs answer SECURITY_DISABLED",
    )
    parser.add_argument(
        "--super-users",
        metavar="PRINCIPALS",
        help="with --authorizer: principals allowed everything (Kafka's super.users: 'User:A;User:B')",
    )
    parser.add_argument(
        "--allow-everyone-if-no-acl-found",
        action="store_true",
        help="with --authorizer: a resource no ACL names is open to everyone (Kafka's allow.everyone.if.no.acl.found)",
    )
    parser.add_argument("--capture-dir", type=Path, metavar="PATH", help="write traffic capture (Parquet) here")
    parser.add_argument(
        "--metrics-listen",
        type=listen_address,
        metavar="HOST:PORT",
        help="serve /metrics, /state and /healthz over HTTP here",
    )
    parser.add_argument("--max-frame-bytes", type=positive_int, default=104_857_600, help="largest accepted frame")
    parser.add_argument(
        "--max-queued-bytes",
        type=positive_int,
        default=268_435_456,
        help="memory for requests across all connections; past it the daemon stops reading (default 256 MiB)",
    )
    parser.add_argument("--idle-timeout-ms", type=positive_int, default=600_000, help="close idle connections")
    parser.add_argument(
        "--max-connections",
        type=positive_int,
        metavar="N",
        help="inbound connections open at once; more are closed at accept "
        "(default: half of the descriptor limit left after 256)",
    )
    parser.add_argument(
        "--snapshot-bytes",
        type=positive_int,
        default=DEFAULT_SNAPSHOT_BYTES,
        help="log bytes between snapshots (default 20 MiB)",
    )
    parser.add_argument(
        "--num-partitions",
        type=positive_int,
        default=ControllerConfig.default_partitions,
        help="partitions of a topic created with -1 (Kafka's num.partitions, default 1)",
    )
    parser.add_argument(
        "--default-replication-factor",
        type=positive_int,
        default=ControllerConfig.default_replication_factor,
        help="replication factor of a topic created with -1 (Kafka's default.replication.factor, default 1)",
    )
    parser.add_argument(
        "--max-records-per-operation",
        type=positive_int,
        default=ControllerConfig.max_records_per_operation,
        help="the most records one user operation may write (default 10000, Kafka's MAX_RECORDS_PER_USER_OP)",
    )
    parser.add_argument(
        "--segment-bytes",
        type=positive_int,
        default=DEFAULT_SEGMENT_BYTES,
        help="metadata log segments roll at this size (default 1 GiB, Kafka's metadata.log.segment.bytes)",
    )
    parser.add_argument(
        "--metadata-retention-bytes",
        type=positive_int,
        default=DEFAULT_RETENTION_BYTES,
        help="past this total of segments and snapshots, the oldest snapshots and the segments below the "
        "oldest kept are deleted (default 100 MiB, Kafka's metadata.max.retention.bytes)",
    )
    parser.add_argument(
        "--repair-log",
        action="store_true",
        help="truncate a corrupt metadata log at its first bad batch instead of refusing to start",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-format", default="text", choices=["text", "json"])


def run(args: argparse.Namespace) -> int:
    if args.max_queued_bytes < args.max_frame_bytes:  # a frame that large could never be read
        print(
            f"fencer-controller: error: --max-queued-bytes {args.max_queued_bytes} is below "
            f"--max-frame-bytes {args.max_frame_bytes}",
            file=sys.stderr,
        )
        return 2
    try:
        tls = tls_options(args)
        authorizer_config(args.authorizer, args.super_users, args.allow_everyone_if_no_acl_found)
    except (TlsConfigError, ValueError) as exc:  # the engine checks the authorizer's options again
        print(f"fencer-controller: error: {exc}", file=sys.stderr)
        return 2
    try:
        quorum = quorum_config(
            args.node_id,
            args.listen,
            args.controller_quorum_voters,
            election_timeout_ms=args.controller_quorum_election_timeout_ms,
            fetch_timeout_ms=args.controller_quorum_fetch_timeout_ms,
            voter_principals=tuple(args.controller_quorum_voter_principal),
        )
        check_voter_authentication(
            quorum,
            clients_authenticated=tls is not None and tls.clients_authenticated,
            allow_unauthenticated=args.allow_unauthenticated_voters,
        )
    except QuorumConfigError as exc:
        print(f"fencer-controller: error: {exc}", file=sys.stderr)
        return 2
    logging_config.configure(args.log_level, args.log_format)
    try:
        engine = start_engine(args, sole_voter=quorum.single)
    except LogError as exc:
        print(f"fencer-controller: {exc}", file=sys.stderr)
        return 1
    tune_runtime()
    try:
        trio.run(_serve, engine, daemon_options(args, tls), quorum)
    except BaseException as exc:  # trio raises what failed inside an ExceptionGroup
        unbound = find_failure(exc, ListenError)
        if unbound is not None:
            print(f"fencer-controller: {unbound}", file=sys.stderr)
            return 1
        failure = find_failure(exc, LogError)
        if failure is None:
            raise
        # the state ran ahead of the disk: only a restart's recovery can reconcile them
        log.critical("stopping: %s", failure)
        return 1
    return 0


def start_engine(args: argparse.Namespace, *, sole_voter: bool = True) -> ControllerEngine:
    """Open the data dir and load the state (`LogError` if it is unusable); log how it went. The
    engine is a standby: the daemon's quorum activates it once elected. A sole voter's whole log
    is committed: it is replayed here; a member of a quorum of several replays what the quorum
    says is committed."""
    host, port = args.listen
    with collector.off():  # start-up (see controller.collector); `tune_runtime` settles it after
        return _load_engine(args, host, port, sole_voter)


def _load_engine(args: argparse.Namespace, host: str, port: int, sole_voter: bool) -> ControllerEngine:
    engine = ControllerEngine.load(
        args.data_dir,
        cluster_id=args.cluster_id,
        node_id=args.node_id,
        session_timeout_ms=args.session_timeout_ms,
        host=host,
        port=port,
        repair=args.repair_log,
        snapshot_bytes=args.snapshot_bytes,
        max_records_per_operation=args.max_records_per_operation,
        default_partitions=args.num_partitions,
        default_replication_factor=args.default_replication_factor,
        segment_bytes=args.segment_bytes,
        metadata_retention_bytes=args.metadata_retention_bytes,
        authorizer=args.authorizer,
        super_users=args.super_users,
        allow_everyone_if_no_acl_found=args.allow_everyone_if_no_acl_found,
    )
    if sole_voter:
        replay_whole_log(engine)
    for message in engine.startup.recovery.messages:
        log.warning("%s", message)
    report = engine.startup
    if report.aborted is not None:
        log.warning("%s", report.aborted)
    log.info(
        "started: cluster %s, node %d, controller epoch %d, %d snapshot + %d log records replayed in %.2f s "
        "(snapshot read %.2f s, snapshot replayed %.2f s, log replayed %.2f s)",
        engine.config.cluster_id,
        engine.config.node_id,
        report.controller_epoch,
        report.snapshot_records,
        report.replayed_records,
        report.seconds,
        report.snapshot_read_seconds,
        report.snapshot_replay_seconds,
        report.log_replay_seconds,
    )
    return engine


def tune_runtime() -> None:
    """The process settings a long-running, latency-sensitive daemon wants (each says why)."""
    collector.settle_after_start()  # the replayed state out of the cyclic collector's way
    # The writer's worker thread needs the GIL for a few bytecodes around each write and fsync:
    # with CPython's default 5 ms switch interval it waits for the busy event loop that long each
    # time, and every group commit (and its requests' latency) with it.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    raise_descriptor_limit()


def tls_options(args: argparse.Namespace) -> TlsOptions | None:
    """The listener's TLS from the flags (None: plaintext); TlsConfigError, one line, if unusable."""
    if args.tls_cert is None and args.tls_key is None:
        if args.tls_ca is not None:
            raise TlsConfigError("--tls-ca needs --tls-cert and --tls-key")
        return None
    if args.tls_cert is None or args.tls_key is None:
        raise TlsConfigError("--tls-cert and --tls-key go together")
    context = server_context(args.tls_cert, args.tls_key, args.tls_ca)
    try:
        rules = parse_rules(args.ssl_principal_mapping_rules)
    except MappingRulesError as exc:
        raise TlsConfigError(f"--ssl-principal-mapping-rules: {exc}") from exc
    try:  # the control channel presents the same certificate to brokers' SSL listeners
        client = client_context(args.tls_cert, args.tls_key, args.tls_ca)
    except ValueError as exc:
        raise TlsConfigError(str(exc)) from exc
    try:  # what voters sharing this node's certificate present (controller.auth.voters)
        principal: str | None = certificate_principal(args.tls_cert, rules)
    except TlsConfigError:
        principal = None  # no voter can be proven by it: --controller-quorum-voter-principal names them
    return TlsOptions(context, args.tls_handshake_timeout_ms / 1000, rules, client, principal)


def daemon_options(args: argparse.Namespace, tls: TlsOptions | None = None) -> DaemonOptions:
    host, port = args.listen
    metrics_host, metrics_port = args.metrics_listen if args.metrics_listen else (None, 0)
    return DaemonOptions(
        host=host,
        port=port,
        max_frame_bytes=args.max_frame_bytes,
        max_queued_bytes=args.max_queued_bytes,
        idle_timeout_s=args.idle_timeout_ms / 1000,
        max_connections=args.max_connections,
        capture_dir=args.capture_dir,
        metrics_host=metrics_host,
        metrics_port=metrics_port,
        tls=tls,
        broker_heartbeat_interval_ms=args.broker_heartbeat_interval_ms,
    )


def raise_descriptor_limit() -> None:
    """Raise the soft limit on open descriptors to the hard limit, as servers do: every connection
    (inbound, and outbound to each broker) is one; `--max-connections` defaults from it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the descriptor limit from %d to %d: %s", soft, hard, exc)


async def _serve(engine: ControllerEngine, options: DaemonOptions, quorum: QuorumConfig | None = None) -> None:
    daemon = Daemon(engine, options, quorum)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(daemon.run)
        engine.advertise_port(port)
        print(f"listening on {options.host}:{port}", flush=True)

"""fencer-analyze: the command line of the analytics job (`python -m analytics`, `spark-submit`).

Purpose: parse the arguments, refuse what cannot work with one clear line (exit 2), make or
join the Spark session, run the pipeline, print the summary and the report's path.

Rules:
- The master is never hard-coded: `--master` if given; else, under `spark-submit`, whatever
  spark-submit configured (the same job runs on a cluster unchanged); else, run directly,
  `local[*]`. Run directly, the Python workers use this interpreter (PYSPARK_PYTHON, unless set)
  and this checkout's packages (PYTHONPATH); under spark-submit, `--py-files` ships them.
- Exit 2, one line on stderr: bad arguments, no Java (run directly), a capture dir that is
  missing, unreadable or holds no parts, an output path that is a file, a capture or output path
  Spark cannot take by its name (paths.py: a `:` with a glob character; a name the driver's JVM
  cannot encode, e.g. non-ASCII under `LC_ALL=C`, checked once the session runs, so after Spark's
  start-up lines). Exit 1: the job failed (Spark's error follows). Exit 0: the output is in
  place; the last stdout line is `report: <path>`.
- A session this job created is stopped at the end; one that existed (a test's, a notebook's)
  is left running.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from .output import OutputError, check_output, is_uri
from .paths import unencodable_name
from .pcap import DEFAULT_KAFKA_PORTS
from .pcaps import find_inputs
from .pipeline import run
from .read import CaptureError

LOCAL_MASTER = "local[*]"


class UsageError(Exception):
    """A command line the job refuses; the message is the one line the user sees."""


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog="fencer-analyze", description="Decode and aggregate fencer capture directories with Spark."
    )
    parse.add_argument(
        "captures",
        nargs="+",
        metavar="CAPTURE",
        help="capture directories (daemon's or fleet's), pcap or pcapng files, or directories holding them",
    )
    parse.add_argument(
        "--out",
        required=True,
        help="output directory, a local path or a Hadoop filesystem URI such as file:///..., hdfs://... "
        "(replaced when the job succeeds)",
    )
    parse.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    parse.add_argument("--from", dest="time_from", type=instant, help="first request time (ISO 8601, UTC if no zone)")
    parse.add_argument("--to", dest="time_to", type=instant, help="end of the time range, exclusive")
    parse.add_argument("--window-seconds", type=positive_seconds, default=1.0, help="rate window (default 1)")
    parse.add_argument(
        "--journal",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="a fleet run's journal (repeatable): its faults and stale replays marked on the report's timelines",
    )
    parse.add_argument(
        "--kafka-port",
        action="append",
        type=port,
        default=[],
        metavar="PORT",
        help="in pcap files, a TCP port Kafka serves on (repeatable; default 9092 and 9093)",
    )
    return parse


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from error
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"not a TCP port (1-65535): {text!r}")
    return value


def instant(text: str) -> int:
    """An ISO 8601 time (UTC unless it names a zone), or seconds since the epoch, as ns; exact
    (decimal and integer arithmetic: a double holds epoch nanoseconds only to 256 ns)."""
    try:
        seconds = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        pass
    else:
        if seconds.is_finite():
            return int((seconds * 1_000_000_000).to_integral_value(decimal.ROUND_HALF_EVEN))
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time or epoch seconds: {text!r}") from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return (moment - _EPOCH) // datetime.timedelta(microseconds=1) * 1000


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from error
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"must be > 0 and <= 86400: {text!r}")
    return value


def under_spark_submit() -> bool:
    """True when spark-submit launched this process (it hands the driver its JVM's gateway)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def java_found() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return True
    return shutil.which("java") is not None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; the process's exit status."""
    args = parser().parse_args(argv)
    try:
        captures, pcap_files = find_inputs(args.captures)
        out: Path | str = args.out if is_uri(args.out) else check_output(Path(args.out))
        if args.time_from is not None and args.time_to is not None and args.time_from >= args.time_to:
            raise UsageError("--from must be before --to")
        for journal in args.journal:
            if not journal.is_file():
                raise UsageError(f"journal {journal}: not a file")
        if not under_spark_submit() and not java_found():
            raise UsageError("Java not found: install Java 17 and put `java` on PATH or set JAVA_HOME")
    except (CaptureError, OutputError, UsageError) as error:
        print(f"fencer-analyze: {error}", file=sys.stderr)
        return 2
    already_running = SparkSession.getActiveSession() is not None
    try:
        spark = session(args.master)
    except Exception as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        print(f"fencer-analyze: Spark could not start: {first_line}", file=sys.stderr)
        return 2
    try:
        unopenable = unopenable_path(spark, captures, out)
        if unopenable:
            print(f"fencer-analyze: {unopenable}", file=sys.stderr)
            return 2
        try:
            result = run(
                spark,
                captures,
                out,
                window_seconds=args.window_seconds,
                time_from_ns=args.time_from,
                time_to_ns=args.time_to,
                journals=[journal.resolve() for journal in args.journal],
                pcap_files=pcap_files,
                kafka_ports=frozenset(args.kafka_port) or DEFAULT_KAFKA_PORTS,
            )
        except OutputError as error:  # a URI the session's filesystems cannot take
            print(f"fencer-analyze: {error}", file=sys.stderr)
            return 2
    finally:
        if not already_running:
            spark.stop()
    print("\n".join(result.summary))
    print(f"tables: {result.out}")
    print(f"report: {result.report}")
    return 0


def unopenable_path(spark: SparkSession, captures: Sequence[Path], out: Path | str) -> str | None:
    """The line to print for the first path the driver's JVM cannot open by name; None if there is none.

    The JVM encodes file names in its `sun.jnu.encoding`, taken from the locale when it started
    (ASCII under `LC_ALL=C`): a name that does not encode would be PATH_NOT_FOUND deep in a job."""
    jvm = getattr(spark, "_jvm", None)  # None for a Spark Connect session: no JVM here to ask
    if jvm is None:
        return None
    encoding = str(jvm.java.lang.System.getProperty("sun.jnu.encoding"))
    local = [("output", out)] if isinstance(out, Path) else []  # a URI's names are its filesystem's
    for label, path in [*(("capture dir", capture) for capture in captures), *local]:
        if unencodable_name(path, encoding):
            shown = os.fsencode(path).decode("utf-8", "backslashreplace")  # bytes not in UTF-8 as \xNN
            return (
                f"{label} {shown}: the JVM cannot open this name, which its file name encoding ({encoding}, "
                "from the locale) cannot encode; a UTF-8 locale (LC_ALL=C.UTF-8) takes any name in UTF-8"
            )
    return None


def session(master: str | None) -> SparkSession:
    """The session to run on: `master` if given, spark-submit's, or local[*] when run directly."""
    builder = SparkSession.builder.appName("fencer-analyze")
    if master:
        builder = builder.master(master)
    elif not under_spark_submit():
        builder = builder.master(LOCAL_MASTER)
    if not under_spark_submit():
        workers_import_this_code()
        builder = builder.config("spark.ui.showConsoleProgress", "true")
        # the driver is the whole cluster in local mode: memory for the decoded rows' sorts and
        # joins, and the throughput collector (2-4 CPU s less per million exchanges than G1 here);
        # under spark-submit these are spark-submit's to set
        builder = builder.config("spark.driver.memory", local_driver_memory())
        builder = builder.config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
    return builder.getOrCreate()


def local_driver_memory() -> str:
    """A quarter of the machine's memory, between 1 and 8 GiB (Spark's default is 1 GiB)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "1g"
    return f"{max(1, min(8, total // 4 // 2**30))}g"


def workers_import_this_code() -> None:
    """Make local Python workers run this interpreter and import this copy of `analytics` and `protocol`.

    Run directly, Spark starts its Python workers with the driver's environment; without this
    they would use whatever `python3` is on PATH and whatever `analytics` it finds first."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = str(Path(__file__).resolve().parent.parent)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, paths)])


def console() -> None:
    """The `fencer-analyze` console script."""
    sys.exit(main())

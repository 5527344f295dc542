"""The output directory: built whole beside its final place, then put there by renames.

Purpose: a run that fails, or is killed, never leaves a half-written output where a good one
was. `staged(spark, out)` yields a `Staging`: a fresh temporary sibling of `out` that the
tables (Spark's writers), the report and the summary (the driver) are written into; when the
block finishes, an existing `out` is moved aside, the new one renamed into place, and the old
one deleted.

`out` is either a local path (a plain path: `LocalStaging`, Python's file operations) or a Hadoop
filesystem URI (`scheme:/...`: `file:///...`, `hdfs://...`, `s3a://...` where the cluster has
the connector: `HadoopStaging`, the session's Hadoop `FileSystem` API, so the driver needs no
mount of it). The job decides by the form of `--out` (`is_uri`).

Rules:
- The temporary sibling is `.<name>.tmp-<pid>-<ns>` in the same directory as `out` (so the rename
  stays on one filesystem); the old output goes to `.<name>.old-<pid>-<ns>` until the new one is
  in place. Both start with `.`, so readers that skip hidden names never see them (Spark and
  Hadoop do).
- On failure the temporary sibling is deleted and `out` is left exactly as it was.
- A local `out` that exists and is not a directory is refused before anything runs
  (`OutputError`), as is one Spark cannot read back by its name (paths.py: a `:` with a glob
  character). A URI is checked once the session runs: a filesystem Spark has no implementation
  for, or an existing `out` that is a file, is an `OutputError`.
- On an object store (S3) a rename is a copy: the output appears whole, but not atomically.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from .paths import escape_globs, path_problem, read_path, write_path

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")  # a scheme, then a path: file:/x, file:///x, hdfs://nn/x


class OutputError(Exception):
    """An output path the job cannot use; the message is the one line the user sees."""


def is_uri(out: str) -> bool:
    """Is `--out` a Hadoop filesystem URI (`scheme:/...`, as Hadoop reads one) rather than a local path?"""
    return _URI.match(out) is not None


class Staging(Protocol):
    """The temporary output: where each table is written and read back, and the driver's files."""

    def write_path(self, name: str) -> str: ...

    def read_path(self, name: str) -> str: ...

    def write_text(self, name: str, text: str) -> None: ...

    def delete(self, name: str) -> None: ...

    def final(self, name: str = "") -> str:
        """Where `name` will be once the output is in place (for the user)."""
        ...


def check_output(out: Path) -> Path:
    """`out`, absolute; `OutputError` if it is a file, its parent cannot hold it or Spark cannot read it."""
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise OutputError(f"output {out}: exists and is not a directory")
    problem = path_problem(out)
    if problem:
        raise OutputError(f"output {out}: {problem}")
    parent = out.parent
    if parent.exists() and not parent.is_dir():
        raise OutputError(f"output {out}: {parent} is not a directory")
    if parent.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"output {out}: cannot write in {parent}")
    return out


class LocalStaging:
    def __init__(self, directory: Path, out: Path) -> None:
        self.directory = directory
        self.out = out

    def write_path(self, name: str) -> str:
        return write_path(self.directory / name)

    def read_path(self, name: str) -> str:
        return read_path(self.directory / name)

    def write_text(self, name: str, text: str) -> None:
        (self.directory / name).write_text(text, encoding="utf-8")

    def delete(self, name: str) -> None:
        shutil.rmtree(self.directory / name, ignore_errors=True)

    def final(self, name: str = "") -> str:
        return str(self.out / name) if name else str(self.out)


@contextmanager
def staged_output(out: Path) -> Iterator[LocalStaging]:
    """Yield an empty temporary directory that replaces the local `out` when the block succeeds."""
    out = check_output(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tag = _tag()
    staging = out.parent / f".{out.name}.tmp-{tag}"
    staging.mkdir()
    try:
        yield LocalStaging(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    previous = out.parent / f".{out.name}.old-{tag}"
    if out.exists():
        out.rename(previous)
    try:
        staging.rename(out)
    except BaseException:
        if previous.exists():
            previous.rename(out)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(previous, ignore_errors=True)


class HadoopStaging:
    """A temporary output on a Hadoop filesystem, through the driver's JVM."""

    def __init__(self, spark: Any, fs: Any, directory: Any, out: Any) -> None:
        self._jvm = spark._jvm
        self.fs = fs
        self.directory = directory
        self.out = out

    def _child(self, name: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(self.directory, name)

    def write_path(self, name: str) -> str:
        return str(self._child(name).toString())

    def read_path(self, name: str) -> str:
        return escape_globs(self.write_path(name))

    def write_text(self, name: str, text: str) -> None:
        stream = self.fs.create(self._child(name), True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def delete(self, name: str) -> None:
        self.fs.delete(self._child(name), True)

    def final(self, name: str = "") -> str:
        target = self._jvm.org.apache.hadoop.fs.Path(self.out, name) if name else self.out
        return str(target.toString())


@contextmanager
def staged_hadoop_output(spark: Any, uri: str) -> Iterator[HadoopStaging]:
    """`staged_output` for a Hadoop filesystem URI, with the session's `FileSystem` API."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        raise OutputError(f"output {uri}: a Hadoop URI needs the driver's JVM (not available with Spark Connect)")
    hadoop = jvm.org.apache.hadoop.fs
    out = hadoop.Path(uri)
    try:
        fs = out.getFileSystem(spark._jsc.hadoopConfiguration())
    except Exception as error:  # py4j's Java exception: no FileSystem for the scheme, a bad authority
        raise OutputError(f"output {uri}: {_java_message(error)}") from None
    out = fs.makeQualified(out)
    if fs.exists(out) and not fs.getFileStatus(out).isDirectory():
        raise OutputError(f"output {uri}: exists and is not a directory")
    parent = out.getParent()
    if parent is None:
        raise OutputError(f"output {uri}: the root of a filesystem cannot be replaced")
    fs.mkdirs(parent)
    tag = _tag()
    staging = hadoop.Path(parent, f".{out.getName()}.tmp-{tag}")
    fs.mkdirs(staging)
    try:
        yield HadoopStaging(spark, fs, staging, out)
    except BaseException:
        fs.delete(staging, True)
        raise
    previous = hadoop.Path(parent, f".{out.getName()}.old-{tag}")
    if fs.exists(out) and not fs.rename(out, previous):
        fs.delete(staging, True)
        raise OutputError(f"output {uri}: the previous output could not be moved aside")
    if not fs.rename(staging, out):
        if fs.exists(previous):
            fs.rename(previous, out)
        fs.delete(staging, True)
        raise OutputError(f"output {uri}: the new output could not be renamed into place")
    fs.delete(previous, True)


def staged(spark: Any, out: Path | str) -> Any:
    """The staged output for `out`: a local path, or a Hadoop URI (`is_uri`)."""
    if isinstance(out, str) and is_uri(out):
        return staged_hadoop_output(spark, out)
    return staged_output(Path(out))


@contextmanager
def unsorted_partitioned_writes(spark: Any, open_files: int) -> Iterator[None]:
    """Within the block, a `partitionBy` write keeps up to `open_files` files open in each task
    rather than sorting the task's rows by the partition columns first; the session's settings are
    restored after.

    Spark's default plans a sort before such a write: a task buffers (and sorts) all its rows before
    it writes the first, so writing cannot overlap what produces the rows (the decoding); with a file
    open per partition value, each row is written as it comes. A task with more values than
    `open_files` sorts the rest, as before."""
    settings = {
        "spark.sql.optimizer.plannedWrite.enabled": "false",
        "spark.sql.maxConcurrentOutputFileWriters": str(open_files),
    }
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _tag() -> str:
    return f"{os.getpid()}-{time.time_ns()}"


def _java_message(error: Exception) -> str:
    text = str(getattr(error, "java_exception", error))
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__

"""`meta.properties`: the identity of a data directory, in Kafka's KRaft format (version 1).

Kafka writes version 1 for KRaft (`cluster.id`, `node.id`, and since 3.7 `directory.id`);
version 0 is the ZooKeeper era's (`cluster.id`, `broker.id`). Both are read; fencer formats
with version 1.

Written like Kafka's `PropertiesUtils.writePropertiesFile` (a Java properties file stored with
an empty comment, so a `#` line and a `#<date>` line come first):

    #
    #Thu Nov 21 06:17:00 UTC 2024
    cluster.id=<22-char Kafka UUID string>
    directory.id=<22-char Kafka UUID string>
    node.id=<n>
    version=1

Rules:
- Written atomically: `meta.properties.tmp`, fsync, rename, fsync of the directory.
- Reading accepts what Java's `Properties.load` accepts for these keys (`=` or `:`, spaces
  around the separator, `#` and `!` comments); it requires version 0 or 1, an integer node id
  (`node.id`, or `broker.id` for version 0) and a cluster id. Anything else, or a missing
  file, is a `LogError` naming the file.
- fencer never rewrites an existing file; were it to, `render` keeps every key read
  (`directory.id` and any other, in `others`), in Kafka's sorted order.
- A cluster id we generate is Kafka's (22 characters of URL-safe base64); one given by the
  operator must be non-empty and made of `A-Z a-z 0-9 . _ -`, so that it needs no escaping.
- `load_or_format` formats a directory only when it has no `meta.properties` and no log data;
  otherwise the stored ids must match the given ones (a mismatch names both).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .ids import new_cluster_id, random_uuid, uuid_string
from .model import LogError
from .segments import PARTITION_DIR, fsync_directory, list_segments, write_text_atomically

META_PROPERTIES = "meta.properties"
KRAFT_VERSION = 1
ZK_VERSION = 0
_CLUSTER_ID = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """The fields of a KRaft `meta.properties`."""

    cluster_id: str
    node_id: int
    directory_id: str | None = None
    version: int = KRAFT_VERSION
    #: Keys other than version, cluster.id, node.id/broker.id and directory.id, kept as read.
    others: tuple[tuple[str, str], ...] = ()

    @classmethod
    def new(cls, cluster_id: str | None, node_id: int) -> MetaProperties:
        """Properties for a directory being formatted (a new cluster id unless one is given)."""
        return cls(cluster_id or new_cluster_id(), node_id, uuid_string(random_uuid()))


def check_cluster_id(cluster_id: str) -> None:
    """Raise `LogError` unless `cluster_id` can be stored and compared as it is."""
    if not _CLUSTER_ID.fullmatch(cluster_id):
        raise LogError(f"invalid cluster id {cluster_id!r}: use letters, digits, '.', '_' and '-' only")


def render(props: MetaProperties, now: datetime) -> str:
    """The file's text, as Java's `Properties.store(writer, "")` lays it out."""
    values = dict(props.others)
    values["cluster.id"] = props.cluster_id
    if props.directory_id is not None:
        values["directory.id"] = props.directory_id
    values["broker.id" if props.version == ZK_VERSION else "node.id"] = str(props.node_id)
    values["version"] = str(props.version)
    lines = ["#", "#" + now.strftime("%a %b %d %H:%M:%S %Z %Y")]
    lines += [f"{key}={values[key]}" for key in sorted(values)]
    return "\n".join(lines) + "\n"


def parse(text: str) -> dict[str, str]:
    """The key/value pairs of a Java properties text (no line continuations or escapes)."""
    found: dict[str, str] = {}
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            found[line] = ""
        else:
            found[match.group(1)] = match.group(2)
    return found


def read_meta_properties(path: Path) -> MetaProperties:
    """The properties stored at `path` (raises `LogError` when unreadable or not version 0 or 1)."""
    try:
        values = parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise LogError(f"cannot read {path}: {exc}") from None
    version_text = values.get("version")
    if version_text not in (str(ZK_VERSION), str(KRAFT_VERSION)):
        raise LogError(
            f"{path}: version is {version_text!r}, only versions {ZK_VERSION} (ZooKeeper) "
            f"and {KRAFT_VERSION} (KRaft) are supported"
        )
    version = int(version_text)
    cluster_id = values.get("cluster.id", "")
    if not cluster_id:
        raise LogError(f"{path}: no cluster.id")
    id_key = "broker.id" if version == ZK_VERSION else "node.id"
    try:
        node_id = int(values.get(id_key, ""))
    except ValueError:
        raise LogError(f"{path}: {id_key} is {values.get(id_key)!r}, not an integer") from None
    known = {"version", "cluster.id", id_key, "directory.id"}
    others = tuple(sorted((k, v) for k, v in values.items() if k not in known))
    return MetaProperties(cluster_id, node_id, values.get("directory.id"), version, others)


def write_meta_properties(directory: Path, props: MetaProperties, *, fsync: bool) -> Path:
    """Write `meta.properties` into `directory` atomically; return its path."""
    text = render(props, datetime.now().astimezone())
    return write_text_atomically(directory, META_PROPERTIES, text, fsync=fsync)


def load_or_format(
    data_dir: Path, cluster_id: str | None, node_id: int, *, fsync: bool, messages: list[str]
) -> MetaProperties:
    """Validate `meta.properties` against the given ids, or format the directory on first use."""
    if data_dir.exists() and not data_dir.is_dir():
        raise LogError(f"data directory {data_dir} is not a directory")
    if cluster_id is not None:
        check_cluster_id(cluster_id)
    path = data_dir / META_PROPERTIES
    if not path.exists():
        partition = data_dir / PARTITION_DIR
        if partition.is_dir() and any(p.stat().st_size for _, p in list_segments(partition)):
            raise LogError(
                f"{data_dir} holds a metadata log but no {META_PROPERTIES}: restore it or use another directory"
            )
        if not data_dir.is_dir():
            data_dir.mkdir(parents=True)
            if fsync:
                fsync_directory(data_dir.parent)
        meta = MetaProperties.new(cluster_id, node_id)
        write_meta_properties(data_dir, meta, fsync=fsync)
        messages.append(f"formatted {data_dir}: cluster id {meta.cluster_id}, node id {node_id}")
        return meta
    meta = read_meta_properties(path)
    if cluster_id is not None and cluster_id != meta.cluster_id:
        raise LogError(
            f"cluster id mismatch: {path} says cluster.id={meta.cluster_id}, but cluster id {cluster_id} was given"
        )
    if node_id != meta.node_id:
        raise LogError(f"node id mismatch: {path} says node.id={meta.node_id}, but node id {node_id} was given")
    return meta

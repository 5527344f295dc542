"""Local paths as the path strings Spark's file sources and sinks take literally.

Purpose: capture and output dirs may be named with any character a file name may hold (the
fleet's `--processes K` capture dirs are `process=<k>`); `read_path` and `write_path` turn such
a path into the string to hand to `spark.read` / `DataFrame.write`, and `path_problem` names the
paths that cannot be handed over at all, so that the job refuses them in one line.

Rules:
- A Hadoop path string is not a URI. `org.apache.hadoop.fs.Path` takes `scheme:`, then
  `//authority`, then the rest of the string as the path itself, character for character (it
  quotes the path into a URI on its own). `pathlib.Path.as_uri()`'s percent-escapes are read as
  part of the names: `process=0` handed over as `file:///.../process%3D0` is a file named
  `process%3D0`, which does not exist (PATH_NOT_FOUND), and a write goes to that other directory.
  A local path is therefore `file://` + the absolute path, unescaped: spaces, `%`, `#`, `=`,
  `;`, newlines and non-ASCII letters are taken as they are.
- Spark's readers expand Hadoop globs in the paths they are given when a path holds one of
  `\\ * ? [ ] { }`: `a?b` would also read a sibling `axb`, `a[1]` would read only `a1`, `a{b` is
  an error. `read_path` escapes each of those characters with `\\`, which the glob takes
  literally. Writers do not glob: `write_path` escapes nothing.
- Hadoop cannot glob a path that holds a `:` in a name (a glob builds each name into a relative
  path, and `a:b` reads as a scheme: "Relative path in absolute URI"). A `:` alone is fine (no
  glob); a `:` together with a glob character anywhere in the path is refused (`path_problem`;
  the paths are resolved first, so a link to the directory does not help, renaming does).
- The JVM opens files by names encoded in its file name encoding (`sun.jnu.encoding`, from the
  locale: ASCII under `LC_ALL=C`). A name it cannot encode cannot be opened
  (`unencodable_name`, checked by the job once the session runs).
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

#: Hadoop's glob metacharacters (`org.apache.hadoop.fs.GlobPattern`) plus its escape, `\`.
GLOB_CHARACTERS = "\\*?[]{}"
_GLOB = re.compile("([" + re.escape(GLOB_CHARACTERS) + "])")


def write_path(path: Path) -> str:
    """`path` (made absolute) as the Hadoop path string of exactly that local file or directory."""
    return "file://" + str(Path(path).resolve())


def read_path(path: Path) -> str:
    """`path` as a string Spark's file readers read literally (its glob characters escaped)."""
    return escape_globs(write_path(path))


def escape_globs(hadoop_path: str) -> str:
    """A Hadoop path string with its glob characters escaped, so that readers take it literally."""
    return _GLOB.sub(r"\\\1", hadoop_path)


def path_problem(path: Path) -> str | None:
    """Why Spark cannot read `path` literally (a `:` with a glob character); None if it can."""
    text = str(Path(path).resolve())
    globs = sorted({character for character in text if character in GLOB_CHARACTERS})
    if ":" in text and globs:
        shown = " ".join(globs)
        return f"Spark cannot read a path holding both ':' and a glob character (here {shown}); rename it"
    return None


def unencodable_name(path: Path, encoding: str) -> bool:
    """Whether `path` cannot be encoded in the JVM's file name encoding `encoding` (a Java charset name).

    An encoding Python does not know is taken as able to encode anything (no false refusals)."""
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        return False
    try:
        codec.encode(str(path))
    except UnicodeEncodeError:
        return True
    return False

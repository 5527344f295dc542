"""The deployment files as the tests read them: the compose file (interpolated with its defaults),
the Dockerfile's stages, and the real argument parsers of the programs they run.

Rules: nothing here needs a container runtime. `${VAR:-default}` is read as its default (what a
plain `docker compose up` runs); `$$` is a literal `$`.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
PROMETHEUS_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.yml"
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "fencer.json"
VENV_BIN = Path(sys.executable).parent
_VARIABLE = re.compile(r"\$\$|\$\{(\w+)(?::?[-?]([^}]*))?\}")


def load_yaml(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text())


def interpolate(value: Any) -> Any:
    """Compose's interpolation with every variable unset: `${VAR:-default}` is its default."""
    if isinstance(value, str):
        return _VARIABLE.sub(lambda match: "$" if match.group(0) == "$$" else match.group(2) or "", value)
    if isinstance(value, list):
        return [interpolate(item) for item in value]
    if isinstance(value, dict):
        return {key: interpolate(item) for key, item in value.items()}
    return value


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = interpolate(load_yaml(COMPOSE_FILE))
    return loaded


def as_list(value: str | list[str] | None) -> list[str]:
    """A compose command or entrypoint as argv (the string form is split as a shell would)."""
    if value is None:
        return []
    return shlex.split(value) if isinstance(value, str) else [str(item) for item in value]


@dataclass(frozen=True)
class Mount:
    source: str  # a named volume, or a host path for a bind mount
    target: PurePosixPath
    read_only: bool

    @property
    def bind(self) -> bool:
        return self.source.startswith((".", "/", "~"))


def mounts(service: dict[str, Any]) -> list[Mount]:
    """The service's volumes (short syntax `SOURCE:TARGET[:ro]`)."""
    found = []
    for entry in service.get("volumes", []):
        source, target, *mode = entry.split(":")
        found.append(Mount(source, PurePosixPath(target), "ro" in mode))
    return found


def mount_of(service: dict[str, Any], path: str | Path) -> Mount | None:
    """The mount `path` lies in (the deepest one), if any."""
    inside = [mount for mount in mounts(service) if PurePosixPath(path).is_relative_to(mount.target)]
    return max(inside, key=lambda mount: len(mount.target.parts), default=None)


def published_ports(service: dict[str, Any]) -> dict[int, int]:
    """Container port -> host port, from `[HOST_IP:]HOST_PORT:CONTAINER_PORT` entries."""
    published = {}
    for entry in service.get("ports", []):
        *_, host, container = str(entry).split(":")
        published[int(container)] = int(host)
    return published


# ---------------------------------------------------------------------- the Dockerfile


@dataclass
class Stage:
    name: str
    base: str  # an image, or the name of an earlier stage
    instructions: list[tuple[str, str]] = field(default_factory=list)  # (KEYWORD, arguments)


def dockerfile_instructions(text: str) -> Iterator[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: comments dropped, continuation lines joined."""
    pending = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue  # comments may sit inside a continued instruction too
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        if pending.strip():
            keyword, _, arguments = pending.strip().partition(" ")
            yield keyword.upper(), arguments.strip()
        pending = ""


def stages(text: str | None = None) -> dict[str, Stage]:
    found: dict[str, Stage] = {}
    current: Stage | None = None
    for keyword, arguments in dockerfile_instructions(DOCKERFILE.read_text() if text is None else text):
        if keyword == "FROM":
            words = arguments.split()
            name = words[2] if len(words) > 2 and words[1].upper() == "AS" else f"stage-{len(found)}"
            current = found[name] = Stage(name, words[0])
        elif current is not None:
            current.instructions.append((keyword, arguments))
    return found


def runs(*names: str) -> list[str]:
    """The RUN instructions of the named stages (of every stage if none is named)."""
    chosen = [stage for name, stage in stages().items() if not names or name in names]
    return [arguments for stage in chosen for keyword, arguments in stage.instructions if keyword == "RUN"]


def effective(target: str, keyword: str, all_stages: dict[str, Stage] | None = None) -> str | None:
    """The last `keyword` instruction of `target`, inherited from the stages it is built FROM."""
    all_stages = all_stages or stages()
    stage: Stage | None = all_stages[target]
    while stage is not None:
        for found, arguments in reversed(stage.instructions):
            if found == keyword:
                return arguments
        stage = all_stages.get(stage.base)
    return None


def exec_form(arguments: str | None) -> list[str]:
    """A JSON-array (exec form) ENTRYPOINT, CMD or HEALTHCHECK CMD, as argv."""
    assert arguments is not None
    parsed = json.loads(arguments)
    assert isinstance(parsed, list) and all(isinstance(item, str) for item in parsed), arguments
    return parsed


def healthcheck_command(arguments: str) -> list[str]:
    """The command of `HEALTHCHECK [--options] CMD [...]`."""
    _, _, command = arguments.partition("CMD ")
    return exec_form(command)


# ---------------------------------------------------------------------- the programs


def console_scripts() -> dict[str, str]:
    scripts: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    return scripts


def _controller_parser() -> argparse.ArgumentParser:
    from controller.__main__ import build_parser

    return build_parser()


def _fleet_parser() -> argparse.ArgumentParser:
    from broker_sim.cli import CONSOLE_PROG, build_run_parser

    return build_run_parser(CONSOLE_PROG)


def _analytics_parser() -> argparse.ArgumentParser:
    from analytics.job import parser

    return parser()


#: console script -> (the module:function pyproject.toml names for it, its parser)
PROGRAMS: dict[str, tuple[str, Callable[[], argparse.ArgumentParser]]] = {
    "fencer-controller": ("controller.__main__:console", _controller_parser),
    "fencer-fleet": ("broker_sim.cli:console", _fleet_parser),
    "fencer-analyze": ("analytics.job:console", _analytics_parser),
}


class Refused(Exception):
    """A parser refused an argv (its message, or its exit status)."""


def parse(argv: list[str]) -> tuple[str, argparse.Namespace]:
    """(program, namespace) of an argv whose first word is one of fencer's console scripts, parsed
    by that program's own parser; `Refused` when the parser refuses it, or when a flag is written
    other than in full (argparse takes a prefix, which a new flag can make ambiguous)."""
    program, *arguments = argv
    if program not in PROGRAMS:
        raise Refused(f"{program!r} is not one of fencer's console scripts {sorted(PROGRAMS)}")
    parser = PROGRAMS[program][1]()
    flags = {option for action in parser._actions for option in action.option_strings}
    abbreviated = [word for word in arguments if word.startswith("--") and word.split("=")[0] not in flags]
    if abbreviated:
        raise Refused(f"{program}: not a flag of its own, in full: {abbreviated}")
    try:
        return program, parser.parse_args(arguments)
    except SystemExit as exit_:
        raise Refused(f"{program} exited {exit_.code} on {arguments}") from exit_
    except Exception as error:  # the fleet's parser raises UsageError
        raise Refused(f"{program}: {error}") from error


def shell_commands(script: str) -> list[list[str]]:
    """The simple commands of a `sh -c` script joined by `&&` or `;`, each as argv (`exec` dropped)."""
    commands: list[list[str]] = [[]]
    for word in shlex.split(script):
        if word in ("&&", ";"):
            commands.append([])
        elif not (word == "exec" and not commands[-1]):
            commands[-1].append(word)
    return [command for command in commands if command]


def service_argv(service: dict[str, Any], image_entrypoint: list[str]) -> list[str]:
    """The program argv a service runs: its entrypoint (or the image's) and command; a `sh -c` script
    is reduced to its one fencer program's argv."""
    entrypoint = as_list(service.get("entrypoint")) or image_entrypoint
    argv = [*entrypoint, *as_list(service.get("command"))]
    if argv[:2] in (["/bin/sh", "-c"], ["sh", "-c"]):
        programs = [command for command in shell_commands(argv[2]) if command[0] in PROGRAMS]
        assert len(programs) == 1, f"expected one fencer program in {argv[2]!r}"
        return programs[0]
    return argv


def url_port(text: str, path: str) -> int:
    """The port of the http://HOST:PORT{path} URL in `text`."""
    match = re.search(rf"http://[^/:\s'\"]+:(\d+){re.escape(path)}", text)
    assert match is not None, f"no http://HOST:PORT{path} in {text!r}"
    return int(match.group(1))

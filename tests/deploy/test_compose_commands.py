"""The `docker compose` commands the README (its "## Docker compose" section), the docs' compose page and
`make compose-smoke` give name only services and profiles of the compose file, and flags docker compose has;
and the Makefile keeps the smoke out of `make test`."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest

from .deployment import ROOT, compose

README = ROOT / "README.md"
COMPOSE_PAGE = ROOT / "docs" / "operations" / "compose.md"
SMOKE = ROOT / "deploy" / "compose-smoke.sh"
#: Flags of `docker compose` itself: flag -> what its value is (None: it takes none).
GLOBAL_FLAGS: dict[str, str | None] = {
    "--profile": "profile",
    "-f": "path",
    "--file": "path",
    "-p": "name",
    "--project-name": "name",
    "--env-file": "path",
}
#: The subcommands used in fencer's documentation and scripts, with the flags docker compose v2 gives them.
SUBCOMMANDS: dict[str, dict[str, str | None]] = {
    "up": {
        **dict.fromkeys(["-d", "--detach", "--build", "--no-build", "--abort-on-container-exit", "--wait"]),
        **dict.fromkeys(["--force-recreate", "--no-deps", "--remove-orphans", "-V", "--renew-anon-volumes"]),
        "--scale": "scale",
        "--exit-code-from": "service",
        "-t": "number",
        "--timeout": "number",
    },
    "down": {**dict.fromkeys(["-v", "--volumes", "--remove-orphans"]), "--rmi": "name", "-t": "number"},
    "logs": {**dict.fromkeys(["-f", "--follow", "-t", "--timestamps", "--no-color"]), "--tail": "number"},
    "run": {
        **dict.fromkeys(["--rm", "-d", "--detach", "--no-deps", "-T", "--build"]),
        **dict.fromkeys(["-e", "--env", "--entrypoint", "-v", "--volume", "--name", "-u", "--user"], "text"),
    },
    "build": {**dict.fromkeys(["--no-cache", "--pull", "-q", "--quiet"]), "--build-arg": "text", "--progress": "name"},
    "ps": dict.fromkeys(["-a", "--all", "-q", "--quiet", "--services"]),
    "stop": {"-t": "number"},
    "config": dict.fromkeys(["-q", "--quiet", "--services", "--profiles"]),
    "version": {},
}
_REDIRECTION = re.compile(r"\d*(>>?|<)(&\d+)?\S*")


def section(text: str, heading: str) -> str | None:
    """The body of a `## heading` section of a Markdown text, if it has one."""
    match = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    return match.group(1) if match else None


def documentation() -> tuple[str, str]:
    """(where, text): the README's "Docker compose" section (it must have one) and the docs' compose page."""
    text = section(README.read_text(), "Docker compose")
    assert text is not None, "README.md has no '## Docker compose' section"
    return "README.md and docs/operations/compose.md", text + "\n" + COMPOSE_PAGE.read_text()


def compose_commands(text: str, *, script: bool = False) -> list[list[str]]:
    """Every `docker compose ...` command of a Markdown text, as words: from code blocks line by line
    (comments dropped) and from inline code; a line of several commands is split. A shell `script`
    is read line by line, its `"${compose[@]}"` (docker compose, or podman's) as `docker compose`."""
    if script:
        lines = text.replace('"${compose[@]}"', "docker compose").splitlines()
    else:
        lines = re.findall(r"`([^`\n]+)`", text)
        blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
        lines += [line for block in blocks for line in block.splitlines()]
    commands = []
    for line in lines:
        if "docker compose" not in line:
            continue
        words = shlex.split(line.replace(";", " ; "), comments=True)
        command: list[str] = []
        for word in [*words, ";"]:
            if word in ("&&", "||", ";", "|"):
                if command[:2] == ["docker", "compose"]:
                    commands.append(command[2:])
                command = []
            elif (command or word == "docker") and not _REDIRECTION.fullmatch(word):
                command.append(word)
    return [command for command in commands if command]  # a bare `docker compose` is a mention


def problems(command: list[str], definition: dict[str, Any]) -> list[str]:
    """What in one `docker compose` command (the words after `docker compose`) the file or docker compose lacks."""
    services = definition["services"]
    profiles = {profile for service in services.values() for profile in service.get("profiles", [])}
    found: list[str] = []

    def value(kind: str | None, given: str) -> None:
        if kind == "profile" and given not in profiles:
            found.append(f"no profile {given!r}")
        elif kind == "service" and given not in services:
            found.append(f"no service {given!r}")
        elif kind == "scale":
            service, _, count = given.partition("=")
            if service not in services or not count.isdigit():
                found.append(f"--scale {given!r} is not SERVICE=N of an existing service")
        elif kind == "number" and not given.isdigit():
            found.append(f"{given!r} is not a number")

    words = iter(command)
    subcommand = None
    for word in words:
        flags = GLOBAL_FLAGS if subcommand is None else SUBCOMMANDS[subcommand]
        if word.startswith("-"):
            flag, equals, given = word.partition("=")
            if flag not in flags:
                found.append(f"docker compose {subcommand or ''} has no flag {flag}")
            elif flags[flag] is not None:
                value(flags[flag], given if equals else next(words, ""))
        elif subcommand is None:
            if word not in SUBCOMMANDS:
                found.append(f"no subcommand {word!r} known here")
                break
            subcommand = word
        else:
            value("service", word)
            if subcommand == "run":
                break  # the rest is the command run in the service
    if subcommand is None:
        found.append("no subcommand")
    return found


@pytest.mark.parametrize(
    ("command", "complaint"),
    [
        ("docker compose up --scale fleets=3", "--scale 'fleets=3'"),
        ("docker compose --profile analytic run --rm analytics", "no profile 'analytic'"),
        ("docker compose up --scael fleet=3", "has no flag --scael"),
        ("docker compose logs brokers", "no service 'brokers'"),
        ("docker compose launch", "no subcommand 'launch'"),
        ("docker compose up --exit-code-from fleet2", "no service 'fleet2'"),
    ],
)
def test_a_command_the_file_does_not_back_is_found(command: str, complaint: str) -> None:
    (words,) = compose_commands(f"```sh\n{command}   # a comment\n```\n")
    assert any(complaint in problem for problem in problems(words, compose()))


def unbacked(commands: list[list[str]]) -> dict[str, list[str]]:
    """Each command with problems, and its problems."""
    definition = compose()
    found = {" ".join(command): problems(command, definition) for command in commands}
    return {command: listed for command, listed in found.items() if listed}


def subcommands(commands: list[list[str]]) -> set[str]:
    return {next(word for word in command if word in SUBCOMMANDS) for command in commands}


def test_the_documented_commands_match_the_compose_file() -> None:
    where, text = documentation()
    commands = compose_commands(text)
    assert {"up", "down", "run", "logs"} <= subcommands(commands), f"{where}: {commands}"
    assert unbacked(commands) == {}


def test_the_documentation_shows_scaling_and_every_profile() -> None:
    where, text = documentation()
    commands = [" ".join(command) for command in compose_commands(text)]
    assert any(re.search(r"\bup --scale fleet=\d+", command) for command in commands), where
    profiles = {profile for service in compose()["services"].values() for profile in service.get("profiles", [])}
    shown = {profile for profile in profiles if any(f"--profile {profile}" in command for command in commands)}
    assert shown == profiles


def test_the_smoke_script_commands_match_the_compose_file() -> None:
    commands = compose_commands(SMOKE.read_text(), script=True)
    assert subcommands(commands) == {"version", "down", "build", "up", "run"}
    assert unbacked(commands) == {}


def test_make_compose_smoke_runs_the_script_and_stays_out_of_make_test() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^compose-smoke:[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M)
    assert recipe is not None and recipe.group(1).strip() == "deploy/compose-smoke.sh"
    phony = re.search(r"^\.PHONY:(.*)$", makefile, re.M)
    assert phony is not None and "compose-smoke" in phony.group(1).split()
    test_target = re.search(r"^test:([^\n]*)", makefile, re.M)
    assert test_target is not None and "compose-smoke" not in test_target.group(1)

"""`python -m controller [FLAGS]` runs the daemon; `python -m controller COMMAND ...` a tool.

Commands:
    (none)              the controller daemon: `--data-dir PATH` is required (see controller/server/cli.py)
    dump-log DATA_DIR   print the metadata log and snapshots as `kafka-dump-log` does (read-only)

Rules:
- Each command is a module exposing `add_arguments(parser)` and `run(args) -> int` (the exit
  status), registered in `COMMANDS`; adding one is one line here. The daemon's own flags
  arrive with the daemon, as a command of its own.
- Bad usage exits 2 with a single line on stderr (`<prog>: error: <why>`), never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from controller.log import dump
from controller.server import cli


class CommandLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]

COMMANDS: dict[str, Command] = {
    "dump-log": ("print the metadata log and its snapshots as kafka-dump-log does", dump.add_arguments, dump.run),
}


def build_parser() -> CommandLineParser:
    """The parser of every command."""
    parser = CommandLineParser(prog="python -m controller", description="fencer: a standalone Kafka controller")
    cli.add_arguments(parser)
    parser.set_defaults(run=cli.run)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (summary, add_arguments, run) in COMMANDS.items():
        command = commands.add_parser(name, help=summary, description=summary)
        add_arguments(command)
        command.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command named in `argv` (default: the process arguments); return its exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None and args.data_dir is None:
            parser.error("the daemon needs --data-dir PATH (or a command: " + ", ".join(COMMANDS) + ")")
    except SystemExit as exc:  # usage errors and --help: a status, not an exception, for callers
        return exc.code if isinstance(exc.code, int) else 2
    try:
        status: int = args.run(args)
    except BrokenPipeError:  # `... | head`: the reader left; exit quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status


def console() -> None:
    """The `fencer-controller` console script."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())

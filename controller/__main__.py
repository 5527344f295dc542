"""`python -m controller [FLAGS]` runs the daemon; `python -m controller COMMAND ...` a tool.

Commands:
    (none)              the controller daemon: `--data-dir PATH` is required (see controller/server/cli.py)
    dump-log DATA_DIR   print the metadata log and snapshots as `kafka-dump-log` does (read-only)

Rules:
- Each command is a module exposing `add_arguments(parser)` and `run(args) -> int` (the exit
  status), registered in `COMMANDS`; adding one is one line here. The daemon's own flags
  arrive with the daemon, as a command of its own.
- Bad usage exits 2 with a single line on stderr (`<prog>: error: <why>`), never a traceback.
- SIGTERM or SIGINT before the daemon's own handler takes over (while it imports, formats and
  loads its log) stops it with status 0 and one line on stderr: it has served nothing, so nothing
  is lost, and a supervisor that stops a node it has just started sees a clean stop, not death by
  signal. A tool so stopped exits 128 + the signal's number, as a shell reports it. Modules are
  imported inside `main`, so that window is covered from the interpreter's first lines.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from controller.stopping import StopRequested, find_failure, stopping_on_signals


class CommandLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


#: the daemon's module, then each command's: name -> (summary, module with add_arguments and run)
DAEMON = "controller.server.cli"
COMMANDS: dict[str, tuple[str, str]] = {
    "dump-log": ("print the metadata log and its snapshots as kafka-dump-log does", "controller.log.dump"),
}


def build_parser() -> CommandLineParser:
    """The parser of every command."""
    parser = CommandLineParser(prog="python -m controller", description="fencer: a standalone Kafka controller")
    daemon = importlib.import_module(DAEMON)
    daemon.add_arguments(parser)
    parser.set_defaults(run=daemon.run)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (summary, module_name) in COMMANDS.items():
        module = importlib.import_module(module_name)
        command = commands.add_parser(name, help=summary, description=summary)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command named in `argv` (default: the process arguments); return its exit status."""
    command: str | None = None
    with stopping_on_signals():
        try:
            parser = build_parser()
            try:
                args = parser.parse_args(argv)
                command = args.command
                if command is None and args.data_dir is None:
                    parser.error("the daemon needs --data-dir PATH (or a command: " + ", ".join(COMMANDS) + ")")
            except SystemExit as exc:  # usage errors and --help: a status, not an exception, for callers
                return exc.code if isinstance(exc.code, int) else 2
            try:
                status: int = args.run(args)
            except BrokenPipeError:  # `... | head`: the reader left; exit quietly, as other tools do
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 1
            return status
        except BaseException as exc:  # inside trio's exception groups too
            stop = find_failure(exc, StopRequested)
            if stop is None:
                raise
            if command is not None:
                print(f"fencer {command}: stopped by {stop}", file=sys.stderr)
                return 128 + stop.signum
            print(f"fencer-controller: {stop} before serving: stopped", file=sys.stderr)
            return 0


def console() -> None:
    """The `fencer-controller` console script."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())

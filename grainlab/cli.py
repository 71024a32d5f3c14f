"""The `grainlab` command.

Subcommands are the modules of grainlab.commands: each defines
`add_parser(subparsers)` and `run(args) -> int`, and is found by scanning the
package, so adding a command is adding a module. Every GrainlabError ends
the program with one line `grainlab: <message>` and exit code 2.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import __version__, commands, process_memory
from .errors import GrainlabError

EXIT_USAGE = 2

EPILOG = """\
examples:
  grainlab record -o fib.parquet -- ./build/examples/fib 25 8
  grainlab record --counters task-clock,context-switches -o t.parquet -- ./app
  grainlab info fib.parquet
  grainlab info --json fib.parquet

run `grainlab COMMAND --help` for a command's options.
"""


def command_modules():
    """grainlab.commands.* modules that define a command, sorted by name.
    A module that fails to import becomes a command that reports why, so one
    broken command never takes the others down."""
    found = []
    for info in pkgutil.iter_modules(commands.__path__):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"{commands.__name__}.{info.name}")
        except Exception as e:  # noqa: BLE001 - reported when the command is used
            found.append(_UnavailableCommand(info.name, e))
            continue
        if hasattr(module, "add_parser") and hasattr(module, "run"):
            found.append(module)
    return sorted(found, key=lambda m: m.__name__)


class _UnavailableCommand:
    """Stands in for a command module that could not be imported."""

    def __init__(self, name: str, error: Exception):
        self.name = name
        self.__name__ = f"{commands.__name__}.{name}"
        first = (str(error).strip().splitlines() or [""])[0]
        self.reason = f"{type(error).__name__}: {first}" if first else type(error).__name__

    def add_parser(self, subparsers):
        p = subparsers.add_parser(self.name, help=f"(unavailable: {self.reason})",
                                  add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(run=self.run)

    def run(self, args) -> int:
        raise GrainlabError(f"command {self.name!r} is unavailable in this "
                            f"installation ({self.reason})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grainlab",
        description="Record task-parallel OpenMP programs and find performance "
                    "problems at the level of grains (tasks and loop chunks).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"grainlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in command_modules():
        module.add_parser(sub)
    return parser


def main(argv=None) -> int:
    if (sys.argv[1:] if argv is None else list(argv)) == ["--version"]:
        print(f"grainlab {__version__}")     # without importing every command
        return 0
    process_memory.enable()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args) or 0)
    except GrainlabError as e:
        print(f"grainlab: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # `grainlab info t.parquet | head`: the reader went away; not an error.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("grainlab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

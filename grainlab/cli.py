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

from . import __version__, commands
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
    """grainlab.commands.* modules that define a command, sorted by name."""
    found = []
    for info in pkgutil.iter_modules(commands.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(module, "add_parser") and hasattr(module, "run"):
            found.append(module)
    return sorted(found, key=lambda m: m.__name__)


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

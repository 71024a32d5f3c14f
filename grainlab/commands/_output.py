"""Shared by the commands: the progress reporter (grainlab.progress), the
incomplete-trace warning, durations for people, the program after `--`,
aligned text tables."""
from __future__ import annotations

import sys

from ..errors import UsageError
from ..progress import Progress
from ..units import fmt_ns

__all__ = ["Progress", "warn_incomplete", "fmt_ns", "program_command", "align_columns"]

def warn_incomplete(analysis):
    """One stderr line when the analysed trace is incomplete (what is missing)."""
    run = analysis.run
    if not run["complete"]:
        print(f"grainlab: warning: {run['trace']} is incomplete: " + "; ".join(run["problems"]),
              file=sys.stderr)


def program_command(remainder, missing: str) -> list:
    """The program and its arguments after `--` (argparse.REMAINDER keeps the
    `--`); none: UsageError(missing)."""
    command = list(remainder)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError(missing)
    return command


def align_columns(cells, left=()) -> list:
    """Rows of cells as text lines: each column as wide as its widest cell,
    columns in `left` left-aligned and the others right-aligned, two spaces
    between, no trailing blanks."""
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return ["  ".join(row[i].ljust(w) if i in left else row[i].rjust(w)
                      for i, w in enumerate(widths)).rstrip() for row in cells]

"""The characterization suite: record every example at a chosen size and
characterize the traces, into one folder the notebooks read
(`grainlab suite`; docs/characterize.md).

The suite is a table, examples/suite*.tsv (every file matching, so a new
program adds a file or a line): `name<TAB>size<TAB>arguments`, `#` comments.
A user's own suite is a table of the same form naming programs by path.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import _paths
from ..errors import GrainlabError, UsageError

SIZES = ("small", "medium", "large")


@dataclass(frozen=True)
class Run:
    name: str      # program: an example's name, or a path
    size: str
    args: tuple

    @property
    def label(self) -> str:
        """The trace's name: program, its shape argument if it has one, size."""
        base = Path(self.name).name
        shape = [a for a in self.args[:1] if not a.lstrip("-").isdigit()]
        return "-".join([base, *shape, self.size])

    def program(self) -> Path:
        if "/" in self.name:
            p = Path(self.name)
            if not p.is_file():
                raise GrainlabError(f"suite program {p} not found")
            return p
        return _paths.example(self.name)


def default_tables() -> list[Path]:
    return sorted((_paths.REPO_ROOT / "examples").glob("suite*.tsv"))


def read_tables(paths) -> list[Run]:
    runs = []
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise UsageError(f"suite table {path}: {e.strerror}") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 2 or parts[1] not in SIZES:
                raise UsageError(f"{path}:{n}: expected name<TAB>{'|'.join(SIZES)}<TAB>arguments")
            runs.append(Run(parts[0].strip(), parts[1], tuple((parts[2] if len(parts) > 2
                                                                 else "").split())))
    return runs


def select(runs, size: str, only=None) -> list[Run]:
    sizes = SIZES if size == "all" else (size,)
    chosen = [r for r in runs if r.size in sizes and (not only or r.name in only)]
    if only:
        unknown = sorted(set(only) - {r.name for r in runs})
        if unknown:
            raise UsageError(f"not in the suite: {', '.join(unknown)} "
                             f"(it has: {', '.join(sorted({r.name for r in runs}))})")
    if not chosen:
        raise UsageError("the suite selection is empty")
    return chosen


def record_all(runs, out: Path, threads: int, say=print) -> list[Path]:
    """Record each run with `grainlab record` into out/<label>.parquet."""
    missing = sorted({r.name for r in runs if "/" not in r.name
                      and not (_paths.examples_dir() / r.name).is_file()})
    if missing:
        raise GrainlabError(f"example programs not built: {', '.join(missing)} (run `make build`)")
    out.mkdir(parents=True, exist_ok=True)
    traces = []
    for i, r in enumerate(runs, 1):
        trace = out / f"{r.label}.parquet"
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "grainlab.cli", "record", "-q", "-o",
                              str(trace), "--", str(r.program()), *r.args],
                             capture_output=True, text=True,
                             env={**os.environ, "OMP_NUM_THREADS": str(threads)})
        if res.returncode != 0:
            why = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
            raise GrainlabError(f"recording {r.label} ({r.name} {' '.join(r.args)}) failed: "
                                f"{why.removeprefix('grainlab: ')}")
        say(f"[{i}/{len(runs)}] {r.label}: {time.monotonic() - t0:.1f} s")
        traces.append(trace)
    return traces

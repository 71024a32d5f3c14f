"""The MPI launcher's view of a process, and output names with %r, %p, %h
(docs/trace-format.md, "Output path"; the collector's collector/src/launcher.c
applies the same rules to GRAINLAB_OUTPUT).

Under `mpirun -np 4 grainlab record -o run.%r.parquet -- ./app`, each rank's
`grainlab record` reads its rank from the launcher's environment: Open MPI,
PMIx, MPICH/Hydra (PMI) and Slurm each export one. Nothing here needs MPI.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from ..errors import UsageError

RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "SLURM_NPROCS")


@dataclass(frozen=True)
class Launch:
    rank: int | None        # None: not started by an MPI launcher
    size: int | None
    host: str

    @property
    def under_launcher(self) -> bool:
        return self.rank is not None


def _number(text):
    return int(text) if text and text.isdigit() else None


def detect(environ=None) -> Launch:
    env = os.environ if environ is None else environ
    rank = next((r for r in (_number(env.get(v)) for v in RANK_VARS) if r is not None), None)
    size = next((s for s in (_number(env.get(v)) for v in SIZE_VARS) if s is not None), None)
    return Launch(rank, size, socket.gethostname())


def expand(pattern: str, launch: Launch | None = None, pid: int | None = None) -> str:
    """`pattern` with %r (rank), %p (pid), %h (host) and %% replaced; one-line
    UsageError for an unknown sequence, %r outside a launcher, or a name
    without %r when several ranks would write it."""
    launch = detect() if launch is None else launch
    out, i, has_rank = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        key = pattern[i + 1:i + 2]
        if key == "r":
            if not launch.under_launcher:
                raise UsageError(f"{pattern}: %r is the MPI rank, but no launcher set one "
                                 f"({', '.join(RANK_VARS)})")
            out.append(str(launch.rank))
            has_rank = True
        elif key == "p":
            out.append(str(os.getpid() if pid is None else pid))
        elif key == "h":
            out.append(launch.host)
        elif key == "%":
            out.append("%")
        else:
            raise UsageError(f"{pattern}: unknown %-sequence (use %r rank, %p pid, %h host, "
                             "%% for %)")
        i += 2
    if launch.under_launcher and launch.size != 1 and not has_rank:
        raise UsageError(f"{pattern}: this is rank {launch.rank} of an MPI run, and ranks "
                         "would overwrite each other's trace: put %r in the name "
                         "(e.g. run.%r.parquet)")
    return "".join(out)

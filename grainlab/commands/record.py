"""`grainlab record [-o TRACE] [--counters LIST] [--cpu-time] -- PROGRAM ARGS...`

Runs PROGRAM with the collector loaded as its OMPT tool and checks that a
trace came out. Everything that can be checked before the run is (output
path, program, OpenMP runtime, counter names), so mistakes cost one line, not
a wasted run. stdin/stdout/stderr go straight to the program; the exit code is
the program's (128+N if it died of signal N).

The collector spools events (compactly encoded) to TRACE.spool and converts
them to Parquet after the program ends (docs/trace-format.md, "The spool");
record returns once the trace is ready, converting the spool itself if the
program was killed before it could.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from .. import schema as S
from ..record import launch
from ._output import program_command
# what the tests and other callers have read from here
from ..record.launch import (CPU_TIME_COUNTER, PAPI_NAME, SOFTWARE_COUNTERS,  # noqa: F401
                             check_counters, report, run_forwarding_signals)

HELP = "run an OpenMP program with the collector and write a trace"

EPILOG = """\
examples:
  grainlab record -o fib.parquet -- ./build/examples/fib 25 8
  OMP_NUM_THREADS=2 grainlab record -- ./app input.txt
  grainlab record --counters task-clock,context-switches -o t.parquet -- ./app
  grainlab record --cpu-time -o t.parquet -- ./app   # then: grainlab analyze --weigh cpu
  grainlab record --runtime llvm-14 -o t.parquet -- ./app   # on LLVM libomp 14
  grainlab record --runtime intel -o t.parquet -- ./app     # on Intel's libiomp5

counters: Linux software events (task-clock, cpu-clock, page-faults,
minor-faults, major-faults, context-switches, cpu-migrations), off-cpu (ns the
thread was not running: what --cpu-time records) and PAPI presets/native
events (PAPI_TOT_CYC, ...). Counters the machine cannot count are reported
once and left out of the trace.

The program must use LLVM's OpenMP runtime (clang -fopenmp) or Intel's
(icx -fiopenmp); --runtime runs it on another of these. Programs built
with GCC use libgomp, which has no tool interface; --gomp-compat runs them on
libomp's GOMP compatibility layer instead.
"""

def add_parser(subparsers):
    p = subparsers.add_parser("record", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default="trace.parquet", metavar="TRACE",
                   help="trace file to write (default: trace.parquet); %%r is the MPI rank, "
                        "%%p the pid, %%h the host (e.g. under mpirun: -o run.%%r.parquet)")
    p.add_argument("--counters", metavar="LIST", default=None,
                   help="comma-separated counters to read at every grain boundary")
    p.add_argument("--cpu-time", action="store_true",
                   help="also record how long each thread was really running, for each "
                        "grain's CPU time beside its wall time (grains inflated by "
                        "preemption; `grainlab analyze --weigh cpu`); the counter off-cpu")
    p.add_argument("--buffer-events", type=_buffer_events, metavar="N", default=None,
                   help="events buffered per thread before a flush "
                        f"({S.BUFFER_EVENTS_MIN}..{S.BUFFER_EVENTS_MAX}, default "
                        f"{S.BUFFER_EVENTS_DEFAULT}; memory = threads x N x 56 bytes)")
    p.add_argument("--runtime", metavar="RUNTIME", default=None,
                   help="the OpenMP runtime to run PROGRAM on: llvm-N (LLVM libomp N, e.g. "
                        "llvm-14), intel (libiomp5 from `pip install intel-openmp`) or a "
                        "library's path (default: the one PROGRAM links); "
                        "docs/compatibility.md says what each reports")
    p.add_argument("--gomp-compat", action="store_true",
                   help="run a libgomp (GCC) program on LLVM libomp's GOMP layer")
    p.add_argument("--force", action="store_true",
                   help="record even if PROGRAM links no OpenMP runtime (it loads "
                        "one at run time, e.g. a Python extension)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no summary line after the run")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS",
                   help="the program to record and its arguments")
    p.set_defaults(run=run)


def run(args) -> int:
    command = program_command(args.program, "record: no program given (usage: grainlab record "
                                             "[-o TRACE] -- PROGRAM ARGS...)")
    return launch.record(command, Path(args.output), counters=args.counters,
                         cpu_time=args.cpu_time, buffer_events=args.buffer_events,
                         gomp_compat=args.gomp_compat, force=args.force, quiet=args.quiet,
                         runtime=args.runtime)



def _buffer_events(text: str) -> int:
    """The collector's rule (GL_BUFFER_EVENTS_* in grainlab_spool.h)."""
    try:
        n = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not S.BUFFER_EVENTS_MIN <= n <= S.BUFFER_EVENTS_MAX:
        raise argparse.ArgumentTypeError(
            f"{n} is not in {S.BUFFER_EVENTS_MIN}..{S.BUFFER_EVENTS_MAX}")
    return n

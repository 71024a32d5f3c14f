"""Launching a program under the collector: the checks before the run
(output path, program, OpenMP runtime, counter names, another run on the
same output), the environment that loads the collector, the run with
signals forwarded, and the line that says what trace came out
(`grainlab record` is its command line: grainlab.commands.record)."""
from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import _paths
from ..errors import RecordError, TraceError, UsageError
from ..outpath import resolve_output
from . import ranks
from ..trace.scan import closing_counts
from ..trace.spool import header_values, is_converter, is_locked, lock_holder, spool_of
from . import program, runtimes
from ..trace.runtime_info import limitation_line

# The Linux software events the collector offers (collector/src/counters.c),
# and off-cpu, its own: ns each thread was not running (wall minus CPU time).
SOFTWARE_COUNTERS = ("task-clock", "cpu-clock", "page-faults", "minor-faults",
                     "major-faults", "context-switches", "cpu-migrations", "off-cpu")
# What --cpu-time records: the cheapest exact source of a grain's CPU time
# (benchmarks/cpu_time_read.py: ~4 ns per read against ~1.3-2 us for task-clock).
CPU_TIME_COUNTER = "off-cpu"
# PAPI presets (PAPI_TOT_CYC), component-qualified native events
# (perf::TASK-CLOCK) and bare upper-case native names; the collector asks PAPI
# about these. Lower-case names are Linux software event names: only the list.
PAPI_NAME = re.compile(r"^PAPI_[A-Z0-9_]+$|^[A-Za-z0-9_]+::[A-Za-z0-9_:.=+-]+$"
                       r"|^[A-Z][A-Z0-9_.]*$")

# How long after our own SIGINT we wait for the program to stop by itself (it
# got the same Ctrl-C from the terminal) before forwarding the signal.
FORWARD_GRACE_S = 2.0


def record(command: list[str], output: Path, *, counters=None, cpu_time=False,
           buffer_events=None, gomp_compat=False, force=False, quiet=False,
           runtime: str | None = None) -> int:
    """Run `command` with the collector and say what trace came out (one line
    on stderr): the program's exit code (128+N if it died of signal N), or
    another when no trace of this run was written. Everything that can be
    checked before the run is, first."""
    output = Path(ranks.expand(str(output)))   # %r %p %h (under mpirun)
    target = resolve_output(output)      # links followed; only regular files
    before = _identity(target)
    counters = check_counters(counters, cpu_time=cpu_time)
    chosen = runtimes.resolve(runtime) if runtime is not None else None
    prog = program.inspect(command[0])
    _refuse_if_recording(output, target)
    env = os.environ.copy()
    cleanup = None
    if prog.runtime == program.GNU:
        if not gomp_compat:
            raise RecordError(
                f"{command[0]} uses GCC's libgomp, which has no OMPT tool interface: "
                "rebuild it with `clang -fopenmp` (LLVM libomp), or rerun with "
                "--gomp-compat to run it on libomp's GOMP compatibility layer "
                "(source locations of some constructs then point into libomp)")
        cleanup = runtimes.use(chosen, env, gomp=chosen.path if chosen else _libomp_for_libgomp())
    elif prog.runtime == program.NONE and not force:
        raise RecordError(f"{command[0]} does not use OpenMP (no libomp/libgomp "
                          "linked): nothing to record (if it loads libomp at run "
                          "time, add --force)")
    else:
        if chosen is not None:
            runtimes.check_program(prog.path, chosen)
        cleanup = runtimes.use(chosen, env)
    run_id = secrets.token_hex(16)
    env.update(collector_env(command, target, run_id, counters, buffer_events))
    with tempfile.TemporaryDirectory(prefix="grainlab-record-") as tmp:
        # libomp logs its tool search here when it starts: no log means the
        # runtime never started (no construct ran). A user's own setting wins.
        # Intel's libiomp5 (2026.2) frees that log's FILE twice at exit: not there.
        log = None
        intel = chosen.is_intel if chosen else "libiomp5" in str(prog.runtime_path or "")
        if "OMP_TOOL_VERBOSE_INIT" not in env and not intel:
            log = Path(tmp) / "tool-init.log"
            env["OMP_TOOL_VERBOSE_INIT"] = str(log)
        try:
            code = run_forwarding_signals(_argv(command, prog.path), env)
        finally:
            if cleanup:
                cleanup()
        started = None if log is None else log.exists()
        return report(output, target, before, command[0], code, quiet,
                      runtime_started=started, run_id=run_id, runtime=chosen)


def collector_env(command, target: Path, run_id: str, counters, buffer_events) -> dict:
    """The environment that loads the collector into the program's libomp
    and tells it where and what to record."""
    env = {
        "OMP_TOOL": "enabled",
        "OMP_TOOL_LIBRARIES": str(_paths.collector_library()),
        "GRAINLAB_OUTPUT": str(target).replace("%", "%%"),
        "GRAINLAB_OUTPUT_EXPANDED": "1",   # -o's %r %p %h are expanded already
        "GRAINLAB_QUIET": "1",  # record prints its own line about the trace
        # the argv launched: the program may overwrite its own while parsing
        "GRAINLAB_COMMAND": json.dumps(command),
        # this run's token, stored in its trace: record reports on the file
        # its own program wrote, never on another run's
        "GRAINLAB_RUN_ID": run_id,
    }
    hooks = _paths.exec_hooks_library()
    if hooks is not None:
        # exec(): the image about to be replaced appends its buffers first, so
        # a run that execs stays one whole trace (collector/src/exec.c)
        env["LD_PRELOAD"] = " ".join(p for p in (str(hooks), os.environ.get("LD_PRELOAD", "")) if p)
    if counters is not None:
        env["GRAINLAB_COUNTERS"] = counters
    if buffer_events is not None:
        env["GRAINLAB_BUFFER_EVENTS"] = str(buffer_events)
    return env


def _argv(command: list[str], path: Path) -> list[str]:
    """The argv to exec: the program as the user spelled it when it has a
    slash (Path("./app") would print as "app", which exec looks up in PATH),
    else the file PATH lookup found."""
    return [command[0] if "/" in command[0] else str(path)] + command[1:]


def _identity(path: Path):
    """What distinguishes this run's trace from one left by an earlier run:
    the file's inode and modification time (the trace is renamed into place,
    so a new trace is a new inode), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns)


def check_counters(spec: str | None, cpu_time: bool = False) -> str | None:
    if spec is None and not cpu_time:
        return None
    names = []
    for name in (n.strip() for n in spec.split(",")) if spec is not None else ():
        if not name:
            raise UsageError(f"--counters {spec!r}: empty counter name")
        # software events whatever their case, under their perf spelling; a
        # name given twice is one counter (as the collector does)
        if name.lower() in SOFTWARE_COUNTERS:
            name = name.lower()
        if name not in names:
            names.append(name)
    if cpu_time and CPU_TIME_COUNTER not in names:
        names.append(CPU_TIME_COUNTER)
    for name in names:
        if name not in SOFTWARE_COUNTERS and not PAPI_NAME.match(name):
            raise UsageError(
                f"unknown counter {name!r} (software counters: "
                f"{', '.join(SOFTWARE_COUNTERS)}; PAPI events look like "
                "PAPI_TOT_CYC or perf::TASK-CLOCK)")
    if len(names) > 8:
        raise UsageError(f"--counters: at most 8 counters, got {len(names)}")
    return ",".join(names)


def _libomp_for_libgomp() -> str:
    """The LLVM libomp that --gomp-compat runs a libgomp program on (without
    --runtime): its GOMP_* entry points implement GCC's ABI and report OMPT
    events. The loader resolves libgomp.so.1 to it (runtimes.use)."""
    libomp = program.find_libomp()
    if not libomp:
        raise RecordError("--gomp-compat: LLVM libomp not found (install "
                          "libomp-19-dev, set GRAINLAB_LIBOMP or pass --runtime)")
    return libomp


def run_forwarding_signals(argv, env) -> int:
    """Run the program; SIGINT/SIGTERM/SIGHUP sent to grainlab reach it too, so
    its collector can write an incomplete-but-readable trace."""
    try:
        child = subprocess.Popen(argv, env=env)
    except OSError as e:
        raise RecordError(f"{argv[0]}: cannot run ({e.strerror})") from None
    pending = []  # signals received, to forward

    def on_signal(signum, frame):
        pending.append((signum, time.monotonic()))

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, on_signal) for s in handled}
    try:
        interactive = sys.stdin is not None and os.isatty(sys.stdin.fileno()) \
            if _has_fileno(sys.stdin) else False
        forwarded = set()
        while True:
            try:
                return _exit_code(child.wait(timeout=0.1))
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            for i, (signum, when) in enumerate(pending):
                if i in forwarded:
                    continue
                # Ctrl-C at a terminal already reached the program (same process
                # group): forward only if it is still running after a grace period.
                if signum == signal.SIGINT and interactive and now - when < FORWARD_GRACE_S:
                    continue
                forwarded.add(i)
                try:
                    child.send_signal(signum)
                except ProcessLookupError:
                    pass
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _has_fileno(stream) -> bool:
    try:
        stream.fileno()
        return True
    except (AttributeError, OSError, ValueError):
        return False


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _refuse_if_recording(output: Path, target: Path) -> None:
    """Another program recording to the same output: refuse at once, before
    starting ours (a converter finishing an ended run is only a short wait)."""
    spool = spool_of(target)
    holder = lock_holder(spool) if is_locked(spool) else None
    if holder and not is_converter(holder):
        raise RecordError(f"{output} is being recorded by process {holder}: choose another "
                          "output (-o), or wait until that run ends")


def report(output: Path, target: Path, before, name: str, code: int, quiet: bool,
           runtime_started: bool | None = None, run_id: str | None = None,
           runtime: runtimes.Runtime | None = None) -> int:
    """Say what the run left behind, in one line on stderr. `target` is the
    file the collector writes (`output` with links followed); `before` its
    identity before the run: a trace still the same is not this run's."""
    failed = code if code != 0 else 2
    # The collector spools the run and converts it after the program exits:
    # load() waits for that (or converts what a killed run left behind).
    if not spool_of(target).exists() and (_identity(target) == before
                                         or target.stat().st_size == 0):
        if runtime_started is False:
            # libomp loads its tool when it starts, at the first construct
            # (or omp_* call that needs the runtime): it never started.
            print(f"grainlab: no trace written to {output}: {name} ran no OpenMP construct "
                  f"(it exited with {code} before LLVM libomp started, so there was "
                  "nothing to record)", file=sys.stderr)
            return failed
        print(f"grainlab: no trace written to {output}: the OpenMP runtime did not "
              f"load the collector ({name} exited with {code}; is it linked with "
              "LLVM libomp, and does OMP_TOOL_LIBRARIES reach it?)", file=sys.stderr)
        return failed
    spool = spool_of(target)
    if run_id and is_locked(spool):
        # A spool still being written: ours, or another run's that started
        # on the same output (a race the check before the run cannot close)?
        header = header_values(spool)
        if "grainlab.run_id" in header and header["grainlab.run_id"] != run_id:
            holder = lock_holder(spool)
            print(f"grainlab: no trace written to {output}: "
                  f"{'process ' + str(holder) if holder else 'another run'} is recording to it "
                  f"({name} ran untraced and exited with {code}; choose another output)",
                  file=sys.stderr)
            return failed
    try:
        trace = closing_counts(target)  # the converter's counts, or a streamed check
    except TraceError as e:
        print(f"grainlab: {e}", file=sys.stderr)
        return failed
    if run_id and trace.meta.get("run_id", run_id) != run_id:
        print(f"grainlab: no trace written to {output} by this run: the trace there is "
              f"another run's ({name} ran untraced and exited with {code})", file=sys.stderr)
        return failed
    what = (f"{trace.events} events, {trace.threads} "
            f"thread{'' if trace.threads == 1 else 's'}, "
            f"{trace.tasks} tasks, {trace.chunk_events} chunk events")
    if not trace.complete:
        print(f"grainlab: warning: incomplete trace {output} ({what}): "
              + "; ".join(trace.problems), file=sys.stderr)
    elif not quiet:
        print(f"grainlab: wrote {output} ({what})", file=sys.stderr)
    _say_runtime(trace.meta.get("runtime"), runtime, quiet)
    return code


def _say_runtime(meta_runtime, asked: runtimes.Runtime | None, quiet: bool) -> None:
    """One line when the run was not on the runtime asked for (the program
    found another first: an RPATH, a static link), and one when the runtime
    reports less than the collector asks for (docs/compatibility.md)."""
    library = meta_runtime.get("library") if isinstance(meta_runtime, dict) else None
    if asked is not None and library and os.path.realpath(library) != asked.path:
        print(f"grainlab: warning: the program ran on {library}, not on the --runtime "
              f"{asked.name} ({asked.path}): does an RPATH or a static link choose its runtime?",
              file=sys.stderr)
    line = limitation_line(meta_runtime)
    if line and not quiet:
        print(f"grainlab: note: {line}", file=sys.stderr)

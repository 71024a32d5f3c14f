"""`grainlab doctor [--dir DIR] [--json]`: what this machine offers grainlab.

One line per check, each with the fix where something is missing: the
OpenMP runtimes found and whether each implements OMPT (the symbol table),
the compiler that builds programs for recording, perf events and
perf_event_paranoid, PAPI and which counters really count (a tiny program
recorded through the collector with every counter requested: the
collector's own probe), the collector and kernels grainlab found (bundled by
pip or in build/), headless Chromium, MPI, Dask, and the free disk where
traces go. Never fails on a missing part: that is what it reports.
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from .. import _paths
from ..errors import GrainlabError

HELP = "check what this machine offers: OpenMP runtimes, counters, MPI, browser, disk"

SOFTWARE_COUNTERS = ["task-clock", "cpu-clock", "page-faults", "minor-faults", "major-faults",
                     "context-switches", "cpu-migrations", "off-cpu"]
PAPI_COUNTERS = ["PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L1_DCM", "PAPI_L2_DCM", "PAPI_L3_TCM",
                 "PAPI_BR_MSP", "PAPI_RES_STL"]
PROBE_SOURCE = ("#include <stdio.h>\nint main(void) { long s = 0;\n"
                "#pragma omp parallel\n#pragma omp single\n"
                "for (int i = 0; i < 4; i++) {\n#pragma omp task shared(s)\n"
                "{\n#pragma omp atomic\ns += i; }\n}\nprintf(\"%ld\\n\", s); return 0; }\n")
MIN_FREE = 1 << 30          # below this, say traces may not fit


def add_parser(subparsers):
    p = subparsers.add_parser(
        "doctor", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
        epilog="examples:\n  grainlab doctor\n  grainlab doctor --dir /scratch/traces --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", default=".", help="where traces will go (free disk checked there; "
                   "default: the current directory)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--no-probe", action="store_true",
                   help="do not compile and record the tiny program that finds the real counters")
    p.set_defaults(run=run)


def _check(name, ok, detail, fix=None, limited=False, **extra) -> dict:
    """One line: status "ok", "missing", or "limited" (there, but short of
    what grainlab needs: a runtime without OMPT); a fix unless ok."""
    status = "ok" if ok else ("limited" if limited else "missing")
    return {"check": name, "status": status, "ok": bool(ok), "detail": detail,
            "fix": None if ok else fix, **extra}


# ---- OpenMP runtimes ----------------------------------------------------------

def _dynamic_symbols(path: str) -> set:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection
    with open(path, "rb") as f:
        elf = ELFFile(f)
        dynsym = elf.get_section_by_name(".dynsym")
        if not isinstance(dynsym, SymbolTableSection):
            return set()
        return {s.name for s in dynsym.iter_symbols()
                if s["st_shndx"] != "SHN_UNDEF" and s.name}


def _site_dirs() -> list:
    dirs = [sysconfig.get_paths().get("purelib"), sysconfig.get_paths().get("platlib"),
            os.path.join(sys.prefix, "lib")]
    try:
        dirs += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:      # a virtualenv's old site module
        pass
    return [d for d in dict.fromkeys(dirs) if d and os.path.isdir(d)]


def _runtime_candidates() -> list:
    """(kind, path) of the OpenMP runtimes on this machine, symlinks resolved."""
    found = []
    for pattern in ("/usr/lib/llvm-*/lib/libomp.so*", "/usr/lib/*-linux-gnu/libomp.so*",
                    "/usr/lib/libomp.so*", "/usr/local/lib/libomp.so*",
                    "/opt/*/lib/libomp.so*"):
        found += [("libomp", p) for p in glob.glob(pattern)]
    for d in _site_dirs() + [os.path.join(sys.prefix, "lib")]:
        found += [("libiomp5", p) for p in glob.glob(os.path.join(d, "libiomp5.so"))]
        found += [("libiomp5", p) for p in glob.glob(os.path.join(d, "*", "libiomp5.so"))]
    for pattern in ("/usr/lib/*-linux-gnu/libiomp5.so", "/opt/intel/oneapi/compiler/*/lib/libiomp5.so"):
        found += [("libiomp5", p) for p in glob.glob(pattern)]
    for pattern in ("/usr/lib/*-linux-gnu/libgomp.so.1", "/usr/lib64/libgomp.so.1", "/usr/lib/libgomp.so.1"):
        found += [("libgomp", p) for p in glob.glob(pattern)]
    seen, out = {}, []
    for kind, path in found:
        if path.endswith(".dbg") or not os.path.isfile(path):
            continue
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen[real] = True
        out.append((kind, path, real))
    return out


def _runtime_version(kind: str, path: str, real: str) -> str:
    m = re.search(r"llvm-(\d+)", path) or re.search(r"libomp-(\d+)", real)
    if kind == "libomp" and m:
        return f"LLVM {m.group(1)}"
    if kind == "libiomp5":
        m = re.search(r"intel_openmp-([\d.]+)", path) or re.search(r"compiler/([\d.]+)", path)
        return f"Intel {m.group(1)}" if m else "Intel"
    return ""


def check_runtimes() -> list:
    runtimes = _runtime_candidates()
    checks = []
    for kind, path, real in runtimes:
        try:
            symbols = _dynamic_symbols(real)
        except Exception as e:  # noqa: BLE001 - an unreadable library is a finding, not a crash
            checks.append(_check("openmp runtime", False, f"{kind} {path}: unreadable ({e})",
                                 "reinstall that runtime", runtime=kind, path=path, ompt=None))
            continue
        ompt = "ompt_start_tool" in symbols
        if kind == "libiomp5" and not ompt:
            ompt = any(s.startswith("ompt_") for s in symbols)
        version = _runtime_version(kind, path, real)
        label = f"{kind}{' ' + version if version else ''} {path}"
        if real != path:
            label += f" (-> {os.path.basename(real)})"
        if ompt:
            checks.append(_check("openmp runtime", True, f"{label}: OMPT yes, programs on it can be recorded",
                                 runtime=kind, path=path, ompt=True))
        else:
            checks.append(_check(
                "openmp runtime", False, f"{label}: no OMPT, nothing on it can be recorded",
                "build programs with clang -fopenmp (LLVM libomp), or record GCC binaries "
                "with `grainlab record --gomp-compat`", limited=True, runtime=kind, path=path, ompt=False))
    if not any(c.get("ompt") for c in checks):
        checks.append(_check(
            "openmp runtime", False, "no OpenMP runtime with OMPT found",
            "install LLVM's libomp (Debian/Ubuntu: apt install libomp-19-dev clang-19; "
            "or `pip install intel-openmp` for libiomp5)", runtime=None, path=None, ompt=False))
    return checks


# ---- compiler -----------------------------------------------------------------

def find_clang() -> str | None:
    """A clang to compile OpenMP programs with: $CC when it is a clang, else
    clang on PATH, else the newest clang-N on PATH."""
    cc = os.environ.get("CC", "").strip()
    if cc and "clang" in os.path.basename(cc.split()[0]) and shutil.which(cc.split()[0]):
        return shutil.which(cc.split()[0])
    if shutil.which("clang"):
        return shutil.which("clang")
    versions = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        for p in glob.glob(os.path.join(d, "clang-[0-9]*")):
            m = re.fullmatch(r"clang-(\d+)", os.path.basename(p))
            if m and os.access(p, os.X_OK):
                versions.append((int(m.group(1)), p))
    return max(versions)[1] if versions else None


def check_compiler(clang: str | None) -> dict:
    if clang:
        return _check("compiler", True, f"{clang}: build programs to record with `{os.path.basename(clang)} "
                      "-fopenmp`", path=clang)
    return _check("compiler", False, "no clang found (CC, clang, clang-N on PATH)",
                  "install clang with OpenMP (Debian/Ubuntu: apt install clang-19 libomp-19-dev) "
                  "or set CC=/path/to/clang", path=None)


# ---- perf events, PAPI and the counters that count -------------------------------

PARANOID = "/proc/sys/kernel/perf_event_paranoid"


def read_paranoid() -> int | None:
    try:
        return int(Path(PARANOID).read_text().strip())
    except (OSError, ValueError):
        return None


def check_perf() -> dict:
    level = read_paranoid()
    if level is None:
        return _check("perf events", False, f"{PARANOID} unreadable: no perf events in this kernel",
                      "software counters need a kernel with perf events (CONFIG_PERF_EVENTS)",
                      paranoid=None)
    root = os.geteuid() == 0
    if level <= 2 or root:
        return _check("perf events", True, f"perf_event_paranoid={level}"
                      + (" (root: not limited)" if root and level > 2 else
                         ": a process may count its own threads"), paranoid=level)
    return _check("perf events", False, f"perf_event_paranoid={level}: unprivileged counting is off",
                  "sudo sysctl kernel.perf_event_paranoid=2 (or ask the administrator)",
                  paranoid=level)


def _papi_library() -> str | None:
    import ctypes
    import ctypes.util
    for name in ("libpapi.so", "libpapi.so.7.0", "libpapi.so.7", "libpapi.so.6.0",
                 ctypes.util.find_library("papi")):
        if not name:
            continue
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return name
    return None


def _probe_counters(clang: str, names: list, workdir: Path) -> tuple[dict | None, str]:
    """Record the probe program with `names` requested: {name: (available,
    reason)} from the trace's grainlab.counters, or None and why not."""
    exe = workdir / "probe"
    if not exe.is_file():
        src = workdir / "probe.c"
        src.write_text(PROBE_SOURCE)
        r = subprocess.run([clang, "-fopenmp", "-O1", str(src), "-o", str(exe)],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            return None, f"{os.path.basename(clang)} -fopenmp failed: " + (
                r.stderr.strip().splitlines() or ["?"])[-1]
    out = workdir / f"probe-{len(list(workdir.glob('*.parquet')))}.parquet"
    env = dict(os.environ, OMP_NUM_THREADS="2")
    r = subprocess.run([sys.executable, "-m", "grainlab.cli", "record", "-q", "--counters",
                        ",".join(names), "-o", str(out), "--", str(exe)],
                       capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0 or not out.is_file():
        return None, (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    import pyarrow.parquet as pq
    meta = pq.read_metadata(out).metadata or {}
    entries = json.loads(meta.get(b"grainlab.counters", b"[]"))
    return {e["name"]: (bool(e.get("available")), e.get("reason")) for e in entries}, ""


def check_counters(clang: str | None, collector_ok: bool, probe: bool) -> list:
    papi = _papi_library()
    checks = [_check("papi", papi is not None,
                     f"PAPI library {papi} loads" if papi else "no PAPI library",
                     "optional, for hardware counters: apt install libpapi7.0 (or PAPI from the site's modules)",
                     library=papi)]
    if not probe:
        return checks
    if not (clang and collector_ok):
        checks.append(_check("counters", False, "not probed: needs a clang and the collector (above)",
                             "fix the compiler / collector lines, then run doctor again",
                             available=[], unavailable={}))
        return checks
    with tempfile.TemporaryDirectory(prefix="grainlab-doctor-") as tmp:
        soft, why = _probe_counters(clang, SOFTWARE_COUNTERS, Path(tmp))
        hard, why_hard = _probe_counters(clang, PAPI_COUNTERS, Path(tmp)) if soft is not None else (None, "")
    if soft is None:
        checks.append(_check("counters", False, f"probe recording failed: {why}",
                             "check the collector line above", available=[], unavailable={}))
        return checks
    results = dict(soft)
    if hard is not None:
        results.update(hard)
    available = [n for n, (ok, _) in results.items() if ok]
    unavailable = {n: reason for n, (ok, reason) in results.items() if not ok}
    soft_ok = [n for n in SOFTWARE_COUNTERS if n in available]
    papi_ok = [n for n in PAPI_COUNTERS if n in available]
    checks.append(_check("software counters", bool(soft_ok),
                         f"{len(soft_ok)} of {len(SOFTWARE_COUNTERS)} count: {', '.join(soft_ok) or 'none'}",
                         "lower perf_event_paranoid (see perf events)",
                         available=soft_ok, unavailable={n: unavailable.get(n) for n in SOFTWARE_COUNTERS
                                                         if n not in soft_ok}))
    if hard is None:
        detail = f"PAPI counters not probed: {why_hard}"
        reasons = {}
    else:
        reasons = {n: unavailable.get(n) for n in PAPI_COUNTERS if n not in papi_ok}
        first = next((r for r in reasons.values() if r), "")
        detail = (f"{len(papi_ok)} of {len(PAPI_COUNTERS)} count: {', '.join(papi_ok)}" if papi_ok
                  else f"none of {', '.join(PAPI_COUNTERS)} count" + (f" ({first})" if first else ""))
    checks.append(_check("hardware counters", bool(papi_ok), detail,
                         "hardware counters need PAPI and a PMU the kernel exposes (most VMs have none; "
                         "on bare metal: apt install libpapi7.0, perf_event_paranoid <= 2)",
                         available=papi_ok, unavailable=reasons))
    return checks


# ---- grainlab's own native parts ----------------------------------------------------

def check_native() -> list:
    where = "bundled (pip)" if _paths.bundled() else (
        "GRAINLAB_BUILD_DIR" if os.environ.get("GRAINLAB_BUILD_DIR") else "build/ (make)")
    fix = ("reinstall: pip install --force-reinstall --no-deps grainlab (or `make build` in the "
           "source tree; GRAINLAB_BUILD_DIR=DIR names another build)")
    checks = []
    try:
        collector = _paths.collector_library()
        converter = _paths.converter()
    except GrainlabError as e:
        checks.append(_check("collector", False, str(e), fix, where=where, path=None))
    else:
        r = subprocess.run([str(converter)], capture_output=True, text=True, timeout=30)
        if "error while loading shared libraries" in r.stderr:
            checks.append(_check("collector", False, f"{collector}: its converter cannot start: "
                                 + r.stderr.strip().splitlines()[-1],
                                 "the pyarrow it was built against is gone: " + fix,
                                 where=where, path=str(collector)))
        else:
            checks.append(_check("collector", True, f"{collector.parent} ({where}): collector, "
                                 "converter and writer shim", where=where, path=str(collector)))
    kernels = _paths.graph_kernels_library()
    loaded = kernels is not None and _paths.graph_kernel(
        "gl_dag_longest_path", []) is not None
    checks.append(_check("kernels", loaded,
                         f"{kernels}: compiled analysis kernels" if loaded else
                         f"{kernels or _paths.GRAPH_KERNELS + ' not found'}: the analysis runs its slower paths",
                         fix, path=str(kernels) if kernels else None))
    return checks


# ---- the rest: browser, MPI, Dask, disk ----------------------------------------------

def check_chromium() -> dict:
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(b)), None)
    driver = shutil.which("chromedriver")
    ok = bool(browser and driver)
    missing = " and ".join(n for n, p in (("chromium", browser), ("chromedriver", driver)) if not p)
    return _check("headless chromium", ok,
                  f"{browser} + {driver}" if ok else f"{missing} not on PATH (only the web app's browser "
                  "tests need them)", "apt install chromium chromium-driver (or put both on PATH)",
                  browser=browser, driver=driver)


def check_mpi() -> dict:
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not mpirun:
        return _check("mpi", False, "no mpirun/mpiexec on PATH (only hybrid MPI runs need it)",
                      "apt install openmpi-bin libopenmpi-dev (or `module load` the site's MPI)",
                      mpirun=None)
    version = ""
    try:
        r = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=20)
        version = (r.stdout.strip().splitlines() or [""])[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return _check("mpi", True, f"{mpirun}" + (f": {version}" if version else ""), mpirun=mpirun)


def check_dask() -> dict:
    spec = importlib.util.find_spec("distributed")
    if spec is None:
        return _check("dask", False, "dask.distributed not installed (only --workers/--scheduler need it)",
                      f"{sys.executable} -m pip install 'dask[distributed]'", version=None)
    from importlib.metadata import PackageNotFoundError, version
    try:
        v = version("distributed")
    except PackageNotFoundError:
        v = "?"
    return _check("dask", True, f"dask.distributed {v}", version=v)


def check_disk(directory: str) -> dict:
    path = Path(directory).expanduser()
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        st = os.statvfs(probe)
    except OSError as e:
        return _check("disk", False, f"{path}: {e.strerror}", "pass --dir DIR, a directory you can write",
                      path=str(path), free_bytes=None)
    free = st.f_bavail * st.f_frsize
    writable = os.access(probe, os.W_OK)
    ok = writable and free >= MIN_FREE
    detail = f"{path.resolve() if path.exists() else path}: {free / 2**30:.1f} GiB free" + (
        "" if writable else ", not writable")
    fix = ("choose a writable directory (-o DIR/trace.parquet)" if not writable else
           "free space or record elsewhere (-o /scratch/...): a trace takes ~14 bytes per event")
    return _check("disk", ok, detail, fix, path=str(path), free_bytes=free)


def diagnose(directory: str = ".", probe: bool = True) -> list:
    checks = check_runtimes()
    clang = find_clang()
    checks.append(check_compiler(clang))
    checks.append(check_perf())
    native = check_native()
    checks += native
    checks += check_counters(clang, native[0]["ok"], probe)
    checks += [check_chromium(), check_mpi(), check_dask(), check_disk(directory)]
    return checks


def render(checks: list) -> str:
    lines = []
    for c in checks:
        line = f"{c['status'].upper() if not c['ok'] else 'ok':<7}  {c['check']}: {c['detail']}"
        if c["fix"]:
            line += f"  -> fix: {c['fix']}"
        lines.append(line)
    return "\n".join(lines)


def run(args) -> int:
    checks = diagnose(args.dir, probe=not args.no_probe)
    if args.json:
        print(json.dumps({"checks": checks}))
    else:
        print(render(checks))
    return 0

"""`pip install` is a complete install (issue 33): the sdist built from this
checkout builds a wheel (scikit-build-core runs CMakeLists.txt) that holds the
collector, the converter and its writer shim, the OMPT tools and the analysis
kernels; installed into a fresh venv in a temporary directory, away from the
source tree, it records and analyzes a program compiled there.

`pytest -m pip_install` selects these tests (`-m "not pip_install"` skips
them). pip may use the package index, through the user's pip cache (so the
wheels of numpy, pyarrow, ... already downloaded are reused): the test takes
a few minutes, most of it installing the dependencies into the venv.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CC, CXX = "clang-19", "clang++-19"

pytestmark = pytest.mark.pip_install

BUNDLED = ["libgraincollect.so", "libgrainexec.so", "libgrainempty.so", "libgrainclock.so",
           "grainlab-convert", "libgrainwriter.so", "libgrainlab_graph.so"]


def _pip_cache_dir() -> str:
    """The user's pip cache (HOME changes in the test: pip would look there)."""
    out = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else ""


def _clean_env(home: Path, cache: str) -> dict:
    """No source tree on any path: no PYTHONPATH, a fresh HOME, no venv of the
    checkout on PATH; the pip settings (index, cache) kept."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "GRAINLAB_", "VIRTUAL_ENV", "OMP_"))}
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not p.startswith(str(REPO)))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    if cache:
        env["PIP_CACHE_DIR"] = cache
    return env


def _run(cmd, *, cwd, env, timeout=600):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with grainlab installed from the wheel built from the
    sdist of this checkout: (venv, workdir, env)."""
    if not shutil.which(CC) or not shutil.which(CXX):
        pytest.fail(f"{CC}/{CXX} not found (make setup installs them)")
    tmp = tmp_path_factory.mktemp("pip")
    home, work, dist = tmp / "home", tmp / "work", tmp / "dist"
    for d in (home, work, dist):
        d.mkdir()
    env = _clean_env(home, _pip_cache_dir())
    build_env = dict(env, CC=CC, CXX=CXX)
    # sdist, then the wheel from the sdist (so the sdist holds everything a build needs)
    _run([sys.executable, "-m", "build", "--sdist", "--outdir", dist, REPO], cwd=work, env=build_env)
    sdist, = dist.glob("grainlab-*.tar.gz")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, sdist], cwd=work, env=build_env)
    wheel, = dist.glob("grainlab-*.whl")
    venv = tmp / "v"
    _run([sys.executable, "-m", "venv", venv], cwd=work, env=env)
    _run([venv / "bin" / "pip", "install", "-q", wheel], cwd=work, env=env, timeout=900)
    return venv, work, env, wheel


def test_wheel_holds_the_native_parts(installed):
    import zipfile
    _, _, _, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for lib in BUNDLED:
        assert f"grainlab/_lib/{lib}" in names, (lib, sorted(n for n in names if "_lib" in n))
    assert "grainlab/trace_columns.def" in names
    assert "grainlab/app/assets/grainlab.css" in names
    assert not any(n.endswith(".c") for n in names)


def test_installed_package_finds_its_libraries(installed):
    venv, work, env, _ = installed
    probe = ("import json, sys, grainlab; from grainlab import _paths\n"
             "print(json.dumps({'file': grainlab.__file__, 'path': sys.path,\n"
             "  'collector': str(_paths.collector_library()), 'converter': str(_paths.converter()),\n"
             "  'kernels': str(_paths.graph_kernels_library()),\n"
             "  'kernel': _paths.graph_kernel('gl_dag_longest_path', []) is not None}))")
    got = json.loads(_run([venv / "bin" / "python", "-c", probe], cwd=work, env=env).stdout)
    site = str(venv)
    assert got["file"].startswith(site)
    assert not any(p.startswith(str(REPO)) for p in got["path"]), got["path"]
    for key in ("collector", "converter", "kernels"):
        assert got[key].startswith(site) and "/grainlab/_lib/" in got[key], (key, got[key])
    # the converter and the writer shim find the installed pyarrow's libraries
    ldd = _run(["ldd", Path(got["converter"]).parent / "libgrainwriter.so"], cwd=work, env=env).stdout
    assert "not found" not in ldd, ldd
    assert f"{site}/lib/" in ldd and "/pyarrow/libarrow.so" in ldd, ldd


@pytest.mark.parametrize("args, tasks", [(("20", "6"), 2 ** 7 - 2),      # binary tree to depth 6
                                         (("15", "20"), 2 * 987 - 2)])  # 2 F(N+1) - 2
def test_record_and_analyze_a_program_compiled_there(installed, args, tasks):
    venv, work, env, _ = installed
    for f in ("fib.c", "common.h"):
        shutil.copy(REPO / "examples" / f, work / f)
    if not (work / "fib").is_file():
        _run([CC, "-fopenmp", "-O2", "-g", "fib.c", "-o", "fib"], cwd=work, env=env)
    grainlab = venv / "bin" / "grainlab"
    trace = f"fib-{'-'.join(args)}.parquet"
    rec = _run([grainlab, "record", "-o", trace, "--", "./fib", *args],
               cwd=work, env=dict(env, OMP_NUM_THREADS="2"))
    assert f"{tasks} tasks" in rec.stderr, rec.stderr
    info = json.loads(_run([grainlab, "info", "--json", trace], cwd=work, env=env).stdout)
    assert info["tasks"] == tasks, info
    summary = json.loads(_run([grainlab, "analyze", "--json", trace], cwd=work, env=env).stdout)
    assert summary["tasks"] == tasks and summary["grains"] == tasks, summary
    assert summary["complete"] is True


def test_no_omp_tools_header_is_a_one_line_error(tmp_path):
    """A runtime named where there is no omp-tools.h: configuring stops with
    one line saying what to install or set."""
    empty = tmp_path / "runtime"
    empty.mkdir()
    r = subprocess.run(["cmake", "-S", REPO, "-B", tmp_path / "b", f"-DCMAKE_C_COMPILER={CC}",
                        f"-DCMAKE_CXX_COMPILER={CXX}", f"-DGRAINLAB_OMP_ROOT={empty}",
                        "-DGRAINLAB_EXAMPLES=OFF", "-DGRAINLAB_NATIVE_TESTS=OFF"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    lines = [l for l in r.stderr.splitlines() if "omp-tools.h not found" in l and "see the line" not in l]
    assert len(lines) == 1 and lines[0].startswith("grainlab: "), r.stderr
    for fix in ("CC=clang-19", "libomp-19-dev", "GRAINLAB_OMP_ROOT", "GRAINLAB_OMP_INCLUDE"):
        assert fix in lines[0], (fix, lines[0])


def test_doctor_from_the_installed_package(installed):
    """doctor in the fresh venv sees the bundled parts, and its counter probe
    (a program recorded through the installed collector) runs."""
    venv, work, env, _ = installed
    r = _run([venv / "bin" / "grainlab", "doctor", "--json"], cwd=work, env=env)
    by = {c["check"]: c for c in json.loads(r.stdout)["checks"]}
    assert by["collector"]["ok"] and by["collector"]["where"] == "bundled (pip)", by["collector"]
    assert by["collector"]["path"].startswith(str(venv))
    assert by["kernels"]["ok"] and by["kernels"]["path"].startswith(str(venv))
    assert by["dask"]["ok"]
    if by["perf events"]["ok"]:
        assert "task-clock" in by["software counters"]["available"], by["software counters"]

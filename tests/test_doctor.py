"""`grainlab doctor`: each line checked against facts read independently of
it (shutil.which, perf_event_paranoid, os.statvfs, readelf's symbol table),
and the fix shown where something is missing. No traceback on any input."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import grainlab

from grainlab import _paths

LIBOMP = "/usr/lib/llvm-19/lib/libomp.so.5"
LIBGOMP = "/usr/lib/x86_64-linux-gnu/libgomp.so.1"


def doctor_json(*args, env=None) -> dict:
    r = grainlab("doctor", "--json", *args, env=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    checks = json.loads(r.stdout)["checks"]
    by = {}
    for c in checks:
        assert set(c) >= {"check", "status", "ok", "detail", "fix"}, c
        assert (c["fix"] is None) == c["ok"], c
        assert c["status"] in ("ok", "missing", "limited")
        by.setdefault(c["check"], []).append(c)
    return by


def _exports(path: str, symbol: str) -> bool:
    out = subprocess.run(["readelf", "-W", "--dyn-syms", path], capture_output=True, text=True).stdout
    return any(line.split()[-1].split("@")[0] == symbol and " UND " not in line
               for line in out.splitlines() if line.strip())


@pytest.fixture(scope="module")
def report(build, tmp_path_factory):
    where = tmp_path_factory.mktemp("traces")
    return doctor_json("--dir", where), where


def test_runtimes_and_their_ompt(report):
    by, _ = report
    runtimes = {c["path"]: c for c in by["openmp runtime"]}
    for path in (LIBOMP, LIBGOMP):
        if not os.path.isfile(path):
            continue
        real = {os.path.realpath(p): c for p, c in runtimes.items() if p}
        assert os.path.realpath(path) in real, (path, list(runtimes))
        c = real[os.path.realpath(path)]
        assert c["ompt"] is _exports(path, "ompt_start_tool"), c
        assert c["ok"] is c["ompt"]
    gomp = [c for c in by["openmp runtime"] if c["runtime"] == "libgomp"]
    for c in gomp:
        assert c["status"] == "limited" and "--gomp-compat" in c["fix"]


def test_tools_on_path(report):
    by, _ = report
    chromium, = by["headless chromium"]
    assert chromium["browser"] == shutil.which("chromium")
    assert chromium["driver"] == shutil.which("chromedriver")
    assert chromium["ok"] == bool(shutil.which("chromium") and shutil.which("chromedriver"))
    mpi, = by["mpi"]
    assert mpi["mpirun"] == (shutil.which("mpirun") or shutil.which("mpiexec"))
    dask, = by["dask"]
    assert dask["ok"] and dask["version"] == version("distributed")


def test_perf_counters_and_disk(report):
    by, where = report
    paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    perf, = by["perf events"]
    assert perf["paranoid"] == paranoid
    assert perf["ok"] == (paranoid <= 2 or os.geteuid() == 0)
    assert f"perf_event_paranoid={paranoid}" in perf["detail"]
    soft, = by["software counters"]
    if perf["ok"]:       # the collector's own probe, through a recorded program
        assert {"task-clock", "context-switches", "off-cpu"} <= set(soft["available"]), soft
    hard, = by["hardware counters"]
    assert set(hard["available"]) | set(hard["unavailable"]) == {
        "PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L1_DCM", "PAPI_L2_DCM", "PAPI_L3_TCM",
        "PAPI_BR_MSP", "PAPI_RES_STL"}
    assert all(hard["unavailable"].values()), hard        # each with its reason
    disk, = by["disk"]
    st = os.statvfs(where)
    assert abs(disk["free_bytes"] - st.f_bavail * st.f_frsize) < 256 << 20, disk
    assert disk["path"] == str(where)


def test_native_parts_found(report):
    by, _ = report
    collector, = by["collector"]
    assert collector["ok"] and collector["path"] == str(_paths.collector_library())
    assert collector["where"] == ("bundled (pip)" if _paths.bundled() else "build/ (make)")
    kernels, = by["kernels"]
    assert kernels["ok"] and kernels["path"] == str(_paths.graph_kernels_library())


def test_text_is_one_line_per_check(build, tmp_path):
    r = grainlab("doctor", "--no-probe", "--dir", tmp_path)
    assert r.returncode == 0 and not r.stderr, r.stderr
    lines = r.stdout.splitlines()
    by = doctor_json("--no-probe", "--dir", tmp_path)
    assert len(lines) == sum(map(len, by.values()))
    for line in lines:
        status = line.split()[0]
        assert status in ("ok", "MISSING", "LIMITED"), line
        assert ("-> fix: " in line) == (status != "ok"), line


def test_missing_tools_say_the_fix(build, tmp_path):
    """PATH without chromium, chromedriver, mpirun or clang: each line says
    how to get it, and the counters are not probed, not a crash."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty), "CC": ""}
    by = doctor_json("--dir", tmp_path, env=env)
    chromium, = by["headless chromium"]
    assert not chromium["ok"] and "apt install chromium chromium-driver" in chromium["fix"]
    assert "chromium and chromedriver not on PATH" in chromium["detail"]
    mpi, = by["mpi"]
    assert not mpi["ok"] and "openmpi-bin" in mpi["fix"]
    compiler, = by["compiler"]
    assert not compiler["ok"] and "clang-19" in compiler["fix"]
    counters, = by["counters"]
    assert not counters["ok"] and "not probed" in counters["detail"]
    text = grainlab("doctor", "--no-probe", env=env).stdout
    line, = [l for l in text.splitlines() if "headless chromium" in l]
    assert line.startswith("MISSING") and "-> fix: apt install chromium chromium-driver" in line


@pytest.mark.parametrize("args, env", [
    (["--dir", "/nonexistent/deep/dir"], None),
    (["--dir", "/proc/version"], None),
    (["--dir", ""], None),
    ([], {"GRAINLAB_BUILD_DIR": "/nonexistent-build"}),
    ([], {"GRAINLAB_COLLECTOR": "/nonexistent/libgraincollect.so"}),
    ([], {"CC": "/no/such/clang"}),
])
def test_no_traceback_on_any_input(tmp_path, args, env):
    by = doctor_json("--no-probe", *args, env=env)
    if env and ("GRAINLAB_BUILD_DIR" in env or "GRAINLAB_COLLECTOR" in env):
        collector, = by["collector"]
        assert not collector["ok"] and "pip install" in collector["fix"], collector
    assert len(by["disk"]) == 1

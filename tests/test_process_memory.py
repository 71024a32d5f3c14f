"""The command line's process-wide memory choices (grainlab.process_memory):
a "small" or "large" profile by trace size, only when the command line runs.
Observed in a fresh Python: numpy's huge-page advice, and whether a 64 MiB
array comes from glibc's heap or from a fresh mmap."""
import json
import os
import subprocess
import sys

import pytest

from conftest import grainlab
from grainlab.process_memory import LARGE_TRACE_ROWS, profile_for


@pytest.mark.parametrize("rows, setting, expected", [
    (LARGE_TRACE_ROWS - 1, "", "small"),
    (LARGE_TRACE_ROWS, "", "large"),
    (10, "auto", "small"),
    (10 ** 9, " Auto ", "large"),
    (10, "large", "large"),
    (10, " LARGE", "large"),
    (10 ** 9, "small", "small"),
])
def test_profile_by_size_unless_told(rows, setting, expected):
    assert profile_for(rows, setting) == expected


PROBE = r"""
import io, json, sys, contextlib
import numpy as np
from numpy._core import multiarray
import grainlab
from grainlab import cli

def in_heap(address):
    # glibc's main heap may show as several [heap] lines (madvise splits it)
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[heap]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= address < hi:
                return True
    return False

def big_array_from_heap():
    a = np.ones(8 << 20, np.int64)          # 64 MiB, over glibc's mmap threshold
    return in_heap(a.ctypes.data)

path = sys.argv[1]
seen = {"start": multiarray._get_madvise_hugepage()}
grainlab.analyze(path).metrics
seen["library"] = multiarray._get_madvise_hugepage()
seen["library_heap"] = big_array_from_heap()
seen["library_handler"] = multiarray.get_handler_name()
with contextlib.redirect_stdout(io.StringIO()):
    seen["code"] = cli.main(["analyze", "--json", path])
seen["cli"] = multiarray._get_madvise_hugepage()
seen["cli_heap"] = big_array_from_heap()
seen["cli_handler"] = multiarray.get_handler_name()
from grainlab import array_cache
seen["cache_built"] = array_cache.available()
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("pm") / "small.parquet"
    r = grainlab("synth", "--shape", "fork-join", "--grains", "200", "-o", path, "-q")
    assert r.returncode == 0, r.stderr
    return path


def probe(path, profile):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.pop("GRAINLAB_MEMORY_PROFILE", None)
    if profile is not None:
        env["GRAINLAB_MEMORY_PROFILE"] = profile
    r = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_small_trace_gets_the_small_profile_and_the_library_keeps_the_defaults(small_trace):
    seen = probe(small_trace, None)
    assert seen["code"] == 0
    # the library: numpy's and glibc's own choices (a 64 MiB array is an mmap)
    assert seen["library"] == seen["start"]
    assert seen["library_heap"] is False
    # the command line, small profile: no advice, big arrays from the heap
    assert seen["cli"] is False
    assert seen["cli_heap"] is True
    # numpy's own allocator in the library and the small profile
    assert seen["library_handler"] == seen["cli_handler"] == "default_allocator"


def test_the_setting_overrides_the_size(small_trace):
    seen = probe(small_trace, "large")
    assert seen["code"] == 0
    assert seen["cli"] is True and seen["cli_heap"] is False
    # the large profile: numpy's arrays from grainlab's array cache, where built
    assert seen["cli_handler"] == ("grainlab_array_cache" if seen["cache_built"]
                                   else "default_allocator")

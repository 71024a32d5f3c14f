"""The command line's process-wide memory choices (grainlab.process_memory):
numpy's huge-page advice by trace size, and only when the command line runs."""
import json
import subprocess
import sys

import pytest

from conftest import grainlab
from grainlab.process_memory import HUGEPAGE_MIN_ROWS, hugepages_for


@pytest.mark.parametrize("rows, setting, expected", [
    (HUGEPAGE_MIN_ROWS - 1, "", False),
    (HUGEPAGE_MIN_ROWS, "", True),
    (10, "auto", False),
    (10 ** 9, " Auto ", True),
    (10, "1", True),
    (10, "on", True),
    (10 ** 9, "0", False),
    (10 ** 9, "off", False),
])
def test_huge_pages_by_size_unless_told(rows, setting, expected):
    assert hugepages_for(rows, setting) is expected


# In a fresh Python: the advice after the library's analysis, then after the
# command line's, of the same small trace.
PROBE = r"""
import io, json, sys, contextlib
from numpy._core import multiarray
import grainlab
from grainlab import cli
path = sys.argv[1]
seen = {"start": multiarray._get_madvise_hugepage()}
grainlab.analyze(path).metrics
seen["library"] = multiarray._get_madvise_hugepage()
with contextlib.redirect_stdout(io.StringIO()):
    code = cli.main(["analyze", "--json", path])
seen["cli"] = multiarray._get_madvise_hugepage()
seen["code"] = code
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("pm") / "small.parquet"
    r = grainlab("synth", "--shape", "fork-join", "--grains", "200", "-o", path, "-q")
    assert r.returncode == 0, r.stderr
    return path


def probe(path, env_value):
    import os
    env = os.environ.copy()
    env.pop("GRAINLAB_HUGEPAGES", None)
    if env_value is not None:
        env["GRAINLAB_HUGEPAGES"] = env_value
    r = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_command_line_drops_the_advice_for_a_small_trace_and_the_library_keeps_it(small_trace):
    seen = probe(small_trace, None)
    assert seen["library"] == seen["start"]     # numpy's own default, untouched
    assert seen["cli"] is False and seen["code"] == 0


def test_the_setting_overrides_the_size(small_trace):
    seen = probe(small_trace, "1")
    assert seen["cli"] is True and seen["code"] == 0

"""`grainlab info` reads event columns, it does not analyze: its answers on a
deep task tree are the program's own formulas, and its memory grows neither
with the tree's depth nor with the number of events (it streams row groups,
grainlab.trace.scan); peak memory is checked, never time."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import grainlab as run_cli, peak_rss_prefix

MIB = 1024 ** 2


@pytest.mark.parametrize("threads", [1, 2])
def test_deeptree_info_counts_tasks_and_depth_by_formula(record, threads):
    depth, leaves = 300, 5
    t = record("deeptree", depth, leaves, threads=threads)
    s = json.loads(run_cli("info", "--json", t.path).stdout)
    assert s["tasks"] == depth * (leaves + 1)          # examples/README.md
    assert s["max_task_depth"] == depth + 1            # a leaf of the last chain task
    assert s["taskwaits"] == 0 and s["complete"] and s["problems"] == []
    assert s == t.summary() | {"path": str(t.path)}


def test_deeptree_identity_equal_with_1_and_2_threads(record):
    """The chain's identity does not depend on who ran it: lineage sets match."""
    sets = []
    for threads in (1, 2):
        tasks = record("deeptree", 300, 5, threads=threads).tasks()
        sets.append(set(tasks.loc[tasks["kind"] == "explicit", "lineage"]))
    assert len(sets[0]) == 300 * 6
    assert sets[0] == sets[1]


def peak_rss_of(*args) -> int:
    """Peak resident memory (bytes) of one `grainlab` process, from its own rusage."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "peak"
        r = subprocess.run([*peak_rss_prefix(out), sys.executable, "-m", "grainlab.cli",
                            *map(str, args)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return int(out.read_text())


def test_info_memory_does_not_grow_with_depth(tmp_path):
    """200,000 tasks as a spine 2,000 deep and 20 deep: the same events, so the
    same memory (within 25% + 32 MiB), and well under what per-task lineage
    strings would take at depth 2,000 (~1 KiB and more per task)."""
    grains = 200_000
    peaks = {}
    for spine in (20, 2000):
        path = tmp_path / f"spine{spine}.parquet"
        r = run_cli("synth", "--shape", "spine", "--grains", grains,
                    "--spine-length", spine, "-o", path, "-q")
        assert r.returncode == 0, r.stderr
        s = json.loads(run_cli("info", "--json", path).stdout)
        assert s["tasks"] == grains and s["max_task_depth"] == spine
        peaks[spine] = peak_rss_of("info", "--json", path)
    assert peaks[2000] <= 1.25 * peaks[20] + 32 * MIB, peaks
    # ~110 MiB of it is Python, numpy, pandas and pyarrow; ~200 MiB in all
    # (the bound was 400 MiB when info held the whole event table: ~255 MiB)
    assert peaks[2000] < 240 * MIB, peaks


def test_info_memory_does_not_grow_with_events(tmp_path):
    """A loop of 250,000 chunks and one of 2,500,000 (one event each, no
    task): ten times the events, the same memory: one batch of events at a
    time (the whole table took 180 and 450 MiB)."""
    peaks = {}
    for chunks in (250_000, 2_500_000):
        path = tmp_path / f"loop{chunks}.parquet"
        r = run_cli("synth", "--shape", "loop", "--grains", chunks, "-o", path, "-q")
        assert r.returncode == 0, r.stderr
        s = json.loads(run_cli("info", "--json", path).stdout)
        assert s["chunks"] == chunks and s["events"] > chunks
        peaks[chunks] = peak_rss_of("info", "--json", path)
    assert peaks[2_500_000] <= peaks[250_000] + 24 * MIB, peaks

"""`grainlab export --otf2 DIR` (issue 33, part 4): an OTF2 archive written
with the OTF2 library's own bindings, read back by Debian's `otf2-print`.
Per location (thread): the grain-fragment enters equal the graph's fragment
and chunk nodes on that thread, every leave closes the last enter, the
timestamps never go back, and every task is created and completed once."""
from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest

from conftest import grainlab

# regions that are not grains' own code (grainlab/export/otf2_archive.py)
RUNTIME_REGIONS = {"program (initial task)", "parallel region (implicit task)", "create",
                   "idle", "bookkeeping", "join", "taskwait", "taskgroup", "barrier",
                   "region_end", "program_end"}
ROW = re.compile(r'^(ENTER|LEAVE|OMP_TASK_CREATE|OMP_TASK_COMPLETE)\s+(\d+)\s+(\d+)\s+'
                 r'(?:Region: "(.*)" <\d+>|Task: (\d+))')


def otf2_print(anchor) -> list[tuple]:
    out = subprocess.run(["otf2-print", str(anchor)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    rows = []
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            rows.append((m.group(1), int(m.group(2)), int(m.group(3)),
                         m.group(4) if m.group(4) is not None else int(m.group(5))))
        else:
            assert not line.startswith(("ENTER", "LEAVE", "OMP_")), line
    return rows


@pytest.fixture(scope="module")
def otf2_tools():
    if shutil.which("otf2-print") is None:
        pytest.fail("otf2-print missing (Debian's otf2-tools; `make setup` installs it)")


CASES = [("fib", (12,)), ("fib_untied", (12,)), ("loops", ("dynamic,7", 1000)),
         ("taskloop", (10000, 1000)), ("depend", (10,))]


@pytest.mark.parametrize("name, args", CASES, ids=[c[0] for c in CASES])
def test_otf2_print_reads_back_one_enter_per_fragment_properly_nested(
        record, tmp_path, otf2_tools, name, args):
    t = record(name, *args, threads=2)
    out = tmp_path / "otf2"
    r = grainlab("export", "-q", "--no-metrics", t.path, "--otf2", out)
    assert r.returncode == 0, r.stderr
    assert "OTF2" in r.stdout and "cut at" not in r.stdout, r.stdout
    rows = otf2_print(out / "traces.otf2")

    g = t.graph()
    nodes = g.nodes
    grain_nodes = nodes[nodes["type"].astype(str).isin(["fragment", "chunk"]) & (nodes["thread"] >= 0)]
    expected = Counter(grain_nodes["thread"].to_numpy(dtype=np.int64).tolist())
    threads = sorted(set(expected) | set(g.contexts["thread"][g.contexts["thread"] >= 0].tolist()))
    locations = sorted({loc for _, loc, _, _ in rows})
    assert locations == list(range(len(threads)))           # one location per thread, in order

    fragments, stacks, last = Counter(), {}, {}
    created, completed = Counter(), Counter()
    for kind, loc, time, what in rows:
        assert time >= last.get(loc, 0), (loc, time, last[loc])       # nondecreasing per location
        last[loc] = time
        stack = stacks.setdefault(loc, [])
        if kind == "ENTER":
            stack.append(what)
            if what not in RUNTIME_REGIONS:
                fragments[threads[loc]] += 1
        elif kind == "LEAVE":
            assert stack and stack[-1] == what, (loc, time, what, stack[-3:])  # matches the last enter
            stack.pop()
        elif kind == "OMP_TASK_CREATE":
            created[what] += 1
        else:
            completed[what] += 1
    assert all(not s for s in stacks.values())                # everything entered was left
    assert fragments == expected
    tasks = int((g.grains["kind"].astype(str) == "task").sum())
    assert tasks == t.summary()["tasks"]
    assert len(completed) == tasks and all(v == 1 for v in completed.values())
    assert len(created) == tasks and all(v == 1 for v in created.values())


def test_otf2_refuses_a_directory_that_holds_something_else(record, tmp_path, otf2_tools):
    t = record("fib", 12, threads=2)
    (tmp_path / "keep.txt").write_text("mine")
    r = grainlab("export", "-q", t.path, "--otf2", tmp_path)
    assert r.returncode != 0 and "not empty" in r.stderr, r.stderr
    assert (tmp_path / "keep.txt").read_text() == "mine"

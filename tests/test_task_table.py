"""The graph's lean task table (no lineage strings, no execution times) is
the full table's columns, row for row."""
import numpy as np
import pytest

from grainlab import schema as S
from grainlab.tables.tasks import build_task_table
from grainlab.trace.trace import load


@pytest.mark.parametrize("program,args", [("fib", (14, 4)), ("depend", (6,)),
                                          ("regions", ()), ("taskloop", (200, 9))])
def test_lean_task_table_is_the_full_one_without_times(record, program, args):
    t = load(record(program, *args, threads=2).path)
    full = build_task_table(t)
    lean = build_task_table(t, lineage=False, times=False)
    assert set(full.tasks.columns) - set(lean.tasks.columns) >= {"begin_ns", "end_ns",
                                                                 "begin_thread"}
    assert len(lean.tasks) == len(full.tasks) == len(np.unique(full.tasks["id"]))
    for c in lean.tasks.columns:
        assert lean.tasks[c].equals(full.tasks[c]), c
    assert lean.regions.equals(full.regions)
    # one explicit task per distinct created id
    created = t.events.loc[t.events["event"] == S.TASK_CREATE, "task"]
    explicit = (lean.tasks["kind"].astype(str) == "explicit").sum()
    assert explicit == created.nunique()

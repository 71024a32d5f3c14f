"""A plain, loop-by-loop statement of docs/graph-model.md "synchronization"
(who waits for each explicit task), read straight from a trace's events.
It is slow and obviously follows the text; grainlab.graph.build does the
same with columns. tests/test_builder_reference.py checks they agree.

A waiter is named (owner task id, join kind, ordinal): the ordinal-th join
of that kind in the owner's chain. Team barriers are named ("barrier",
region id, k): the k-th barrier of the region.
"""
from __future__ import annotations

from grainlab import schema as S


def owner_of(row) -> int:
    """The task whose chain a row is a boundary of (0: none)."""
    if row.event == S.TASK_CREATE:
        return row.other                       # the parent creates
    return row.task


def waiters(trace) -> dict[int, tuple]:
    ev = trace.events.sort_values(["time"], kind="stable")
    rows = list(ev.itertuples(index=False))
    # every owner's boundary list, in time order: (what, payload)
    chain: dict[int, list] = {}
    parent_of, index_in_parent = {}, {}
    implicit_region, initial = {}, set()
    region_end = {}      # region id -> (initial task, "region_end", ordinal)
    barriers_seen: dict[tuple, int] = {}
    ordinals: dict[tuple, int] = {}

    def boundary(owner, kind, payload=None):
        key = (owner, kind)
        name = (owner, kind, ordinals.get(key, 0))
        ordinals[key] = ordinals.get(key, 0) + 1
        chain.setdefault(owner, []).append((kind, payload, name))
        return name

    for r in rows:
        e = r.event
        if e == S.IMPLICIT_BEGIN:
            if r.kind & S.TASK_INITIAL:
                initial.add(r.task)
            else:
                implicit_region[r.task] = r.other
        elif e == S.TASK_CREATE and r.task not in parent_of:
            parent_of[r.task] = r.other
            index_in_parent[r.task] = len(chain.get(r.other, []))
            boundary(r.other, "create", r.task)
        elif e == S.SYNC_BEGIN and r.kind == S.SYNC_TASKWAIT:
            boundary(r.task, "taskwait")
        elif e == S.SYNC_BEGIN and r.kind in S.SYNC_BARRIERS:
            k = barriers_seen.get((r.task, r.other), 0)
            barriers_seen[(r.task, r.other)] = k + 1
            chain.setdefault(r.task, []).append(("barrier", None, ("barrier", r.other, k)))
        elif e == S.SYNC_BEGIN and r.kind == S.SYNC_TASKGROUP:
            chain.setdefault(r.task, []).append(("taskgroup_begin", None, None))
        elif e == S.SYNC_END and r.kind == S.SYNC_TASKGROUP:
            boundary(r.task, "taskgroup")
        elif e == S.PARALLEL_END:
            region_end[r.other] = boundary(r.task, "region_end")
        elif e == S.IMPLICIT_END and r.kind & S.TASK_INITIAL:
            boundary(r.task, "program_end")

    program_end = next((name for o in initial for kind, _, name in chain.get(o, [])
                        if kind == "program_end"), None)

    def innermost_group_end(owner, i):
        """Name of the end of the innermost taskgroup of `owner` open at its
        i-th boundary, or None."""
        depth, seq = 0, chain[owner]
        for kind, _, name in seq[i + 1:]:
            if kind == "taskgroup_begin":
                depth += 1
            elif kind == "taskgroup":
                if depth == 0:
                    return name
                depth -= 1
        return None

    def first_after(owner, i, kinds):
        for kind, _, name in chain[owner][i + 1:]:
            if kind in kinds:
                return name
        return None

    def direct(x):
        """Rule 1: the parent's first taskwait (barrier, for an implicit
        parent) after the creation, or the end of the innermost taskgroup
        open at the creation, whichever comes first."""
        p, i = parent_of[x], index_in_parent[x]
        kinds = {"taskwait", "program_end"} | ({"barrier"} if p in implicit_region else set())
        group = innermost_group_end(p, i)
        wait = first_after(p, i, kinds)
        if group is not None and (wait is None or _position(chain[p], group) < _position(chain[p], wait)):
            return group, True
        return wait, False

    def catch(x):
        """The join that waits for x's descendants (rule 2)."""
        p, i = parent_of.get(x), index_in_parent.get(x)
        if p is None:
            return program_end
        group = innermost_group_end(p, i)
        if group is not None:       # x is in a taskgroup: it waits for x's subtree
            return group
        w, _ = direct(x)
        if p in implicit_region:
            b = first_after(p, i, {"barrier", "program_end"})
            return b if b is not None else region_end.get(implicit_region[p])
        if w is not None and w[1] in ("barrier", "program_end"):
            return w
        if p in initial:
            return program_end
        return catch(p)

    out = {}
    for x in parent_of:
        if parent_of[x] not in chain:
            continue
        w, _ = direct(x)
        if w is None:
            p = parent_of[x]
            if p in implicit_region:
                w = region_end.get(implicit_region[p])
            elif p in initial:
                w = program_end
            else:
                w = catch(p)
        out[x] = w if w is not None else program_end
    return out


def _position(seq, name):
    return next(k for k, (_, _, n) in enumerate(seq) if n == name)

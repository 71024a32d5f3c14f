"""Random OpenMP task programs, run by a tiny single-thread scheduler that
writes the trace libomp would (tests/tracegen.TraceBuilder) and knows, from
OpenMP's rules alone, which synchronization each task is first known
complete at. It shares nothing with grainlab's graph builder, so it can
judge it (tests/test_builder_reference.py).

The program: the initial task runs `regions` parallel regions one after the
other. Thread 0's implicit task runs a random body; the other threads' implicit
tasks go straight to the region's end barrier (a team of one reports no
barrier, as libomp). A body is a random sequence of: create a task (with its
own random body, run later), `taskwait`, and `taskgroup { body }`. Tasks run
on thread 0 at scheduling points, as a one-thread runtime would:
  taskwait        runs the waiting task's unfinished children;
  taskgroup end   runs the unfinished tasks of the group (children created in
                  it and all their descendants);
  barrier / the   runs everything left.
  region's end
The truth: a sync construct *awaits* a task when OpenMP says the construct
cannot complete before the task has (taskwait: children created before it;
taskgroup: its children and their descendants; barrier and region end: every
task of the region). A task's waiter is the awaiting construct that completes
first.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grainlab import schema as S
from tracegen import TraceBuilder, task_id


@dataclass
class Task:
    id: int
    parent: "Task | None"
    body: list
    groups: tuple = ()        # taskgroup instances it belongs to
    children: list = field(default_factory=list)


@dataclass
class Sync:
    """One sync construct instance: its owner, kind, ordinal among the
    owner's syncs of that kind, and when it completed."""
    owner: int
    kind: str
    ordinal: int
    end: int = -1
    awaited: list = field(default_factory=list)


def random_body(rng, depth: int, budget: list) -> list:
    """A random body: ("task", body) | ("taskwait",) | ("taskgroup", body)."""
    ops = []
    for _ in range(int(rng.integers(0, 5))):
        if budget[0] <= 0:
            break
        r = rng.random()
        if r < 0.55:
            budget[0] -= 1
            ops.append(("task", random_body(rng, depth + 1, budget) if depth < 5 else []))
        elif r < 0.8:
            ops.append(("taskwait",))
        elif depth < 6:
            ops.append(("taskgroup", random_body(rng, depth + 1, budget)))
    return ops


class Program:
    def __init__(self, seed: int, regions: int = 2, max_tasks: int = 60):
        self.rng = np.random.default_rng(seed)
        self.b = TraceBuilder()
        self.t = 0
        self.n = 0
        self.tasks: list[Task] = []
        self.syncs: list[Sync] = []
        self.pending: list[Task] = []
        self.region_index = 0
        self.ended_groups: dict[int, int] = {}
        self.max_tasks = max_tasks
        self.regions = regions

    # -- trace writing ---------------------------------------------------------
    def tick(self) -> int:
        self.t += int(self.rng.integers(1, 20))
        return self.t

    def new_id(self, thread: int = 0) -> int:
        self.n += 1
        return task_id(thread, self.n)

    def sync(self, owner, kind) -> Sync:
        ordinal = sum(s.owner == owner and s.kind == kind for s in self.syncs)
        s = Sync(owner, kind, ordinal)
        self.syncs.append(s)
        return s

    # -- running ---------------------------------------------------------------
    def run(self) -> TraceBuilder:
        b = self.b
        init = self.initial = self.new_id()
        self.region_ids = []
        b.add(0, S.THREAD_BEGIN, self.tick(), kind=1)
        b.add(0, S.IMPLICIT_BEGIN, self.tick(), task=init, kind=S.TASK_INITIAL, count=1)
        workers_started = False
        for _ in range(self.regions):
            team = int(self.rng.integers(1, 3))
            if team == 2 and not workers_started:
                b.add(1, S.THREAD_BEGIN, self.tick(), kind=2)
                workers_started = True
            self.region(init, team)
        if workers_started:
            b.add(1, S.THREAD_END, self.tick())
        end = self.sync(init, "program_end")
        end.awaited = list(self.tasks)          # the program's end awaits everything
        b.add(0, S.IMPLICIT_END, self.tick(), task=init, kind=S.TASK_INITIAL, count=1)
        end.end = self.t
        b.add(0, S.THREAD_END, self.tick())
        return b

    def region(self, init: int, team: int):
        b = self.b
        region = self.new_id()
        self.region_ids.append(region)
        b.add(0, S.PARALLEL_BEGIN, self.tick(), task=init, other=region, count=team)
        imp = [self.new_id(th) for th in range(team)]
        for th in range(team):
            b.add(th, S.IMPLICIT_BEGIN, self.tick(), task=imp[th], other=region, value=th,
                  count=team, kind=S.TASK_IMPLICIT)
        first = len(self.tasks)
        self.current_region = region
        me = Task(imp[0], None, [])
        self.body(me, random_body(self.rng, 0, [self.max_tasks]), region, ())
        if team > 1:
            # thread 1 arrives first and waits; thread 0 runs what is left at the barrier
            barrier = self.sync(("barrier", self.region_index), "barrier")
            t = self.tick()
            b.add(1, S.SYNC_BEGIN, t, task=imp[1], other=region, kind=S.SYNC_BARRIERS[0])
            b.add(0, S.SYNC_BEGIN, self.tick(), task=imp[0], other=region,
                  kind=S.SYNC_BARRIERS[0])
            self.drain(imp[0], lambda x: True)
            barrier.awaited = list(self.tasks[first:])
            t = self.tick()
            for th in range(team):
                b.add(th, S.SYNC_END, t, task=imp[th], other=region, kind=S.SYNC_BARRIERS[0])
            barrier.end = t
        else:
            # a team of one: no barrier event; the region's end awaits its tasks
            self.drain(imp[0], lambda x: True)
            end = self.sync(("region_end", self.region_index), "region_end")
            end.awaited = list(self.tasks[first:])
        t = self.tick()
        for th in range(team):
            b.add(th, S.IMPLICIT_END, t, task=imp[th], value=th, count=team,
                  kind=S.TASK_IMPLICIT)
        b.add(0, S.PARALLEL_END, self.tick(), task=init, other=region)
        if team == 1:
            self.syncs[-1].end = self.t
        self.region_index += 1

    def body(self, me: Task, ops: list, region: int, groups: tuple):
        b = self.b
        for op in ops:
            if op[0] == "task":
                child = Task(self.new_id(), me, op[1], groups + me.groups)
                me.children.append(child)
                self.tasks.append(child)
                self.pending.append(child)
                b.add(0, S.TASK_CREATE, self.tick(), task=child.id, other=me.id,
                      kind=S.TASK_EXPLICIT)
            elif op[0] == "taskwait":
                s = self.sync(me.id, "taskwait")
                s.awaited = list(me.children)
                b.add(0, S.SYNC_BEGIN, self.tick(), task=me.id, other=region,
                      kind=S.SYNC_TASKWAIT)
                self.drain(me.id, lambda x: x.parent is me)
                b.add(0, S.SYNC_END, self.tick(), task=me.id, other=region,
                      kind=S.SYNC_TASKWAIT)
                s.end = self.t
            else:
                s = self.sync(me.id, "taskgroup")
                b.add(0, S.SYNC_BEGIN, self.tick(), task=me.id, other=region,
                      kind=S.SYNC_TASKGROUP)
                self.body(me, op[1], region, groups + (s,))
                self.drain(me.id, lambda x, s=s: s in x.groups)
                s.awaited = [x for x in self.tasks if s in x.groups]
                # a taskgroup's join is where it ends: number them in end order
                s.ordinal = self.ended_groups.get(me.id, 0)
                self.ended_groups[me.id] = s.ordinal + 1
                b.add(0, S.SYNC_END, self.tick(), task=me.id, other=region,
                      kind=S.SYNC_TASKGROUP)
                s.end = self.t

    def drain(self, me_id: int, which):
        """Run pending tasks that `which` selects (and what they leave
        pending that `which` also selects) until none is left."""
        while True:
            ready = [x for x in self.pending if which(x)]
            if not ready:
                return
            x = ready[0]
            self.pending.remove(x)
            self.execute(x, me_id)

    def execute(self, x: Task, prior: int):
        b = self.b
        b.add(0, S.TASK_SCHEDULE, self.tick(), task=x.id, other=prior, kind=S.STATUS_SWITCH)
        # no taskgroup of its own is open when a task starts; x.groups (from
        # its creator) say which groups await it and its descendants
        self.body(x, x.body, self.current_region, ())
        b.add(0, S.TASK_SCHEDULE, self.tick(), task=prior, other=x.id, kind=S.STATUS_COMPLETE)

    # -- the truth -----------------------------------------------------------------
    def waiters(self) -> dict[int, tuple]:
        """task id -> (owner, kind, ordinal) of the sync that first completes
        among those that await it."""
        best: dict[int, Sync] = {}
        for s in self.syncs:
            for x in s.awaited:
                if x.id not in best or s.end < best[x.id].end:
                    best[x.id] = s
        return {tid: (s.owner, s.kind, s.ordinal) for tid, s in best.items()}


def random_program(seed: int, **kw) -> Program:
    p = Program(seed, **kw)
    p.trace = p.run()
    return p

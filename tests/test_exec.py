"""One run across exec() (issue 11 item 2): a program that runs tasks and then
execs another OpenMP image (examples/exec_chain) leaves one trace holding
every image's tasks and every image's command line; nothing is lost, nothing
truncated, through every call of the exec family."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import grainlab as gl
from grainlab import _paths
from conftest import grainlab

CALLS = ["execv", "execve", "execvp", "execl", "execlp", "execle"]


def images(t):
    return t.meta.get("images") or []


@pytest.mark.parametrize("call", CALLS)
def test_every_image_is_in_the_one_trace(record, call):
    tasks, n_images = 300, 3
    t = record("exec_chain", tasks, n_images, call)
    out = record.stdout("exec_chain", tasks, n_images, call)
    assert [f"exec_chain image {k}: {tasks} tasks ran" for k in range(n_images, 0, -1)] == \
        out.strip().splitlines()
    assert t.complete and t.meta["end_reason"] == "finalize"
    assert t.summary()["tasks"] == tasks * n_images
    assert int(t.meta["recorded_events"]) == len(t.events)
    im = images(t)
    assert [i["command"][1:] for i in im] == [[str(tasks), str(k), call]
                                              for k in range(n_images, 0, -1)]
    assert t.meta["command"] == im[0]["command"]
    # each image's threads come after the earlier images'
    firsts = [i["first_thread"] for i in im]
    assert firsts[0] == 0 and all(a < b for a, b in zip(firsts, firsts[1:]))
    # every image's tasks were created on its own threads, in its own time
    create = t.tasks()
    create = create[create["kind"] == "explicit"]
    which = np.searchsorted(firsts, create["create_thread"].to_numpy()
                            if "create_thread" in create else
                            (create["id"].to_numpy().astype(np.uint64) >> np.uint64(40)).astype(np.int64) - 1,
                            side="right") - 1
    assert np.bincount(which, minlength=n_images).tolist() == [tasks] * n_images


def test_each_images_code_is_named_with_its_own_load_map(record):
    t = record("exec_chain", 200, 3, "execv")
    r = grainlab("info", "--json", t.path)
    assert r.returncode == 0, r.stderr
    import json
    info = json.loads(r.stdout)
    locations = [reg["location"] for reg in info["region_list"]]
    assert len(locations) == 3
    assert all(loc.startswith("exec_chain.c:") for loc in locations), locations
    assert len(info["exec_commands"]) == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_the_chain_analyzes_as_one_run(record, threads):
    t = record("exec_chain", 200, 2, "execv", threads=threads)
    a = gl.analyze(t)
    rep = a.report()
    assert rep["grains"] == 400
    duration = t.summary()["duration_ns"]
    assert 0 < rep["span_ns"] <= duration
    # image 2 continues image 1: the critical path runs through both
    nodes = a.graph.nodes
    crit_threads = nodes.loc[nodes["on_critical_path"], "thread"].to_numpy()
    first2 = images(t)[1]["first_thread"]
    assert (crit_threads < first2).any() and (crit_threads >= first2).any()
    assert rep["instantaneous_parallelism"]["achieved_max"] <= threads
    # the images ran one after the other: no task of image 2 starts before
    # every task of image 1 has ended
    gr = a.grains
    first2 = images(t)[1]["first_thread"]
    one, two = gr[gr["thread"] < first2], gr[gr["thread"] >= first2]
    assert len(one) == len(two) == 200
    assert one["end"].max() < two["start"].min()


def test_an_image_that_runs_no_openmp_ends_the_trace_whole(record, example):
    t = record("exec_chain", 250, 2, "execv", example("not_openmp"))
    assert record.stdout("exec_chain", 250, 2, "execv", example("not_openmp")).strip() \
        .splitlines()[-1].startswith("not_openmp(")
    assert t.complete and t.meta["end_reason"] == "exec"
    assert t.summary()["tasks"] == 500
    assert t.problems == []


def test_without_record_the_next_image_still_continues_the_spool(example, tmp_path):
    """Started with the collector alone (no preload of libgrainexec), the
    events an image still buffers at exec are lost, but what it flushed stays:
    never truncated by the next image."""
    out = tmp_path / "t.parquet"
    env = {**os.environ, "OMP_NUM_THREADS": "2", "GRAINLAB_CONVERT": "wait", "GRAINLAB_QUIET": "1",
           "OMP_TOOL_LIBRARIES": str(_paths.build_dir() / "lib" / _paths.COLLECTOR),
           "GRAINLAB_OUTPUT": str(out), "GRAINLAB_BUFFER_EVENTS": "64"}
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([example("exec_chain"), "500", "2"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    t = gl.load(out)
    assert len(images(t)) == 2
    tasks = t.summary()["tasks"]
    assert 500 < tasks <= 1000          # image 2's 500, and image 1's flushed ones


def test_a_later_process_with_the_same_output_replaces_the_spool(record, example, tmp_path):
    """Continuing is for the same process only: two separate runs on one
    output give the second run's trace alone."""
    out = tmp_path / "t.parquet"
    for n in (100, 40):
        r = grainlab("record", "-q", "-o", out, "--", example("exec_chain"), n, 1)
        assert r.returncode == 0, r.stderr
    t = gl.load(out)
    assert t.summary()["tasks"] == 40 and not images(t)

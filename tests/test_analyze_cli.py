"""`grainlab analyze` on real traces of the example programs (recorded through
libomp by the real collector) and on bad input."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grainlab.units import fmt_ns
from conftest import assert_one_line_error, grainlab

PROBLEM_NAMES = {"parallel_benefit", "load_balance", "work_deviation",
                 "instantaneous_parallelism", "scatter", "memory_hierarchy_utilization",
                 "numa_locality", "preempted"}


def analyze_json(path, *extra):
    r = grainlab("analyze", "--json", *extra, path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout)        # exactly one JSON object


@pytest.fixture(scope="module")
def fib(record):
    return record("fib", 20, 5, threads=2)     # 2^6 - 2 = 62 tasks


def test_json_keys_and_types_on_fib(fib):
    r = analyze_json(fib.path)
    assert r["grains"] == 62 and r["tasks"] == 62 and r["chunks"] == 0
    for key in ("work_ns", "span_ns"):
        assert isinstance(r[key], int) and r[key] > 0
    assert r["span_ns"] <= r["work_ns"]
    assert isinstance(r["parallelism"], float)
    assert r["parallelism"] == pytest.approx(r["work_ns"] / r["span_ns"])
    cp = r["critical_path"]
    assert isinstance(cp, list) and cp and all(isinstance(i, int) and 0 <= i < 62 for i in cp)
    assert len(set(cp)) == len(cp)
    assert set(r["problems"]) == PROBLEM_NAMES
    for name, p in r["problems"].items():
        assert isinstance(p["grains"], int) and 0 <= p["grains"] <= 62, name
        assert isinstance(p["percent"], float)
        assert p["percent"] == pytest.approx(100 * p["grains"] / 62)
        assert isinstance(p["on_critical_path"], int) and p["on_critical_path"] <= min(p["grains"], len(cp))
    # no counters on these VMs, no reference run
    assert r["problems"]["memory_hierarchy_utilization"]["available"] is False
    assert r["problems"]["work_deviation"]["available"] is False
    # recorded without --cpu-time
    assert r["problems"]["preempted"]["available"] is False
    assert r["weights"] == "wall" and r["preemption"]["available"] is False
    assert "--cpu-time" in r["preemption"]["reason"]
    # the grains come from fib.c's two task pragmas, found through DWARF
    locs = {l["location"] for l in r["locations"]}
    assert len(locs) == 2 and all(l.startswith("fib.c:") and l.endswith("(fib, task)") for l in locs)
    assert sum(l["grains"] for l in r["locations"]) == 62


def test_threshold_flag_and_config_change_the_counts(fib, tmp_path):
    none = analyze_json(fib.path, "--threshold", "parallel_benefit=0")
    assert none["problems"]["parallel_benefit"]["grains"] == 0
    assert none["thresholds"]["parallel_benefit"] == 0.0
    every = analyze_json(fib.path, "--threshold", "parallel_benefit=1e300")
    # every grain with a finite benefit (created by a fork, joined somewhere)
    assert every["problems"]["parallel_benefit"]["grains"] == 62
    cfg = tmp_path / "t.toml"
    cfg.write_text("[thresholds]\nparallel_benefit = 1e300\nload_balance = 1e300\n")
    by_cfg = analyze_json(fib.path, "--config", cfg)
    assert by_cfg["problems"]["parallel_benefit"]["grains"] == 62
    assert by_cfg["problems"]["load_balance"]["grains"] == 0
    # a flag beats the config file
    both = analyze_json(fib.path, "--config", cfg, "--threshold", "parallel_benefit=0")
    assert both["problems"]["parallel_benefit"]["grains"] == 0


def test_text_report_sections(fib):
    r = grainlab("analyze", "--top", "3", fib.path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for section in ("SUMMARY", "PROBLEMS", "SOURCE LOCATIONS", "CRITICAL PATH"):
        assert section in out
    assert "62 (62 tasks, 0 chunks)" in out
    assert "fib.c:" in out and "parallel_benefit" in out
    assert "unavailable" in out            # memory hierarchy utilization on this VM
    assert r.stderr == ""                  # quick, not a tty: no progress lines


def test_a_path_outside_the_grains_says_where_it_goes(record):
    """depend 6: ~1.5 us of tasks beside hundreds of us of serial start-up;
    the report says the span is not in the grains, and whose it is."""
    t = record("depend", 6, threads=2)
    r = analyze_json(t.path)
    split = r["critical_path_time"]
    assert split["grains_ns"] + split["joins_ns"] + split["contexts_ns"] + split["barriers_ns"] == r["span_ns"]
    # the serial start-up is the initial task's: it is on the path (which of
    # the contexts holds the most depends on how the machine ran them: a busy
    # machine preempts a team's implicit task for longer than the start-up)
    contexts = split["contexts"]
    assert any(c["kind"] == "initial" and c["identity"] == "0" and c["ns"] > 0 for c in contexts)
    assert [c["ns"] for c in contexts] == sorted((c["ns"] for c in contexts), reverse=True)
    assert sum(c["ns"] for c in contexts) == split["contexts_ns"]
    assert len(contexts) <= 3          # the initial task and 2 implicit tasks: all listed
    out = grainlab("analyze", t.path).stdout
    # the span line says what the span is made of: the parts add up to it,
    # each printed with its time
    parts = r["span_parts"]
    assert sum(parts.values()) == r["span_ns"]
    assert parts["serial start"] > 0 and parts["grains"] == split["grains_ns"]
    line = next(ln for ln in out.splitlines() if ln.startswith("  span "))
    for name, ns in parts.items():
        if ns:
            assert f"{name} {fmt_ns(ns)} (" in line, (name, line)
    assert "outside grains (" in out and "initial task 0 " in out


def test_loops_have_chunks_and_load_balance(record):
    t = record("loops", threads=2)
    r = analyze_json(t.path)
    assert r["chunks"] > 0 and r["grains"] == r["tasks"] + r["chunks"]
    assert r["problems"]["load_balance"]["available"] is True


@pytest.mark.parametrize("name, args", [("tree", (3, 3)), ("taskgroup", ()),
                                        ("depend", ()), ("undeferred", (4,)),
                                        ("taskloop", ())])
def test_other_examples_analyze(record, name, args):
    t = record(name, *args, threads=2)
    r = analyze_json(t.path)
    assert r["grains"] == r["tasks"] + r["chunks"] > 0
    assert r["span_ns"] <= r["work_ns"]


def test_missing_file(tmp_path, cli):
    assert_one_line_error(cli("analyze", tmp_path / "nope.parquet"), "nope.parquet",
                          "no such file")


def test_foreign_parquet(tmp_path, cli):
    p = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), p)
    assert_one_line_error(cli("analyze", p), "foreign.parquet", "not a grainlab trace")


def test_not_parquet(tmp_path, cli):
    p = tmp_path / "text.parquet"
    p.write_text("hello\n")
    assert_one_line_error(cli("analyze", "--json", p), "text.parquet")


def test_bad_threshold_and_config(fib, tmp_path, cli):
    assert_one_line_error(cli("analyze", "--threshold", "speed=2", fib.path),
                          "unknown threshold")
    assert_one_line_error(cli("analyze", "--config", tmp_path / "no.toml", fib.path),
                          "no.toml", "no such config file")
    assert_one_line_error(cli("analyze", "--interval", "soon", fib.path), "--interval")


def test_progress_lines_only_when_enabled(capsys):
    from grainlab.commands._output import Progress
    Progress(enabled=True)("building the grain graph")
    Progress(enabled=False)("quiet")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "building the grain graph" in err[0]


def test_interval_choice(fib):
    default = analyze_json(fib.path)["instantaneous_parallelism"]
    cand = default["interval_candidates_ns"]
    assert default["interval_choice"] == "median" and default["interval_ns"] == cand["median"]
    assert 0 < cand["min"] <= cand["median"] and cand["gap"] > 0
    fine = analyze_json(fib.path, "--interval", "min")["instantaneous_parallelism"]
    assert fine["interval_choice"] == "min" and fine["interval_ns"] == cand["min"]
    fixed = analyze_json(fib.path, "--interval", "1000")["instantaneous_parallelism"]
    assert fixed["interval_choice"] == "ns" and fixed["interval_ns"] == 1000

"""The metric registry's self-check (grainlab.metrics.registry): every
declared metric is computed, documented and labelled, and the places that
used to keep their own lists (compute_all, the problems, analyze --help, the
app's labels, docs/metrics.md) read the registry."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import grainlab as gl
from conftest import grainlab
from grainlab import problems as P
from grainlab.app.state import PROBLEM_LABELS
from grainlab.metrics import METRIC_COLUMNS, compute_all, registry as R
from test_krd import two_node_trace

DOCS = Path(__file__).resolve().parent.parent / "docs" / "metrics.md"


def test_declarations_are_complete():
    assert R.check() == []


@pytest.mark.parametrize("change, complaint", [
    ({"meaning": ""}, "a problem needs a direction, a meaning"),
    ({"worse": None}, "a problem needs a direction"),
    ({"compose": "somehow"}, "compose 'somehow'"),
    ({"label": ""}, "label, unit, definition and source"),
    ({"auto": "cores_used"}, "an 'auto' threshold"),
])
def test_the_check_catches_an_incomplete_declaration(monkeypatch, change, complaint):
    bad = dataclasses.replace(R.BY_NAME["load_balance"], **change)
    monkeypatch.setattr(R, "METRICS", tuple(bad if m.name == "load_balance" else m
                                            for m in R.METRICS))
    assert any(complaint in line for line in R.check())


def test_the_docs_table_is_the_registrys():
    text = DOCS.read_text()
    begin, end = text.index(R.TABLE_BEGIN), text.index(R.TABLE_END)
    assert text[begin + len(R.TABLE_BEGIN):end].strip() == R.markdown_table(), \
        "docs/metrics.md: paste `python -m grainlab.metrics.registry` over its metric table"
    for m in R.METRICS:                      # each metric a row, by its label
        assert f"| {m.label} |" in text


def test_problems_and_labels_come_from_the_registry():
    assert list(P.RULES) == list(R.PROBLEM_ORDER)
    for m in R.PROBLEMS:
        assert P.default_thresholds()[m.name] == m.threshold
        assert P.RULES[m.name].below == (m.worse == "lower")
        # the app names every problem, by the registry's label
        assert PROBLEM_LABELS[m.name] == m.label != m.name
    help_text = grainlab("analyze", "--help").stdout
    for name in R.PROBLEM_ORDER:
        assert P.describe(name) in help_text


def test_auto_thresholds_take_the_value_the_registry_names():
    summary = {"cores_used": 3, "cores_per_socket": 7}
    th = P.resolve(P.default_thresholds(), summary)
    for m in R.PROBLEMS:
        if m.auto:
            assert th[m.name] == summary[m.auto]


def everything_recorded(tmp_path):
    """An analysis whose inputs reach every metric: a two-node trace with
    NUMA-placed data accesses, compared against itself (work deviation),
    with stall and cycle counters on its grains and CPU time on its nodes
    (the columns a trace recorded with those counters has)."""
    path = two_node_trace(tmp_path / "two.parquet")
    a = gl.analyze(path, reference=path)
    g = a.graph
    n = len(g.grains)
    g.grains["counter:PAPI_TOT_CYC"] = np.full(n, 3000.0)
    g.grains["counter:PAPI_RES_STL"] = np.full(n, 1000.0)
    g.nodes["counter:off-cpu"] = np.zeros(len(g.nodes))
    return a


def test_every_declared_metric_is_computed(tmp_path):
    a = everything_recorded(tmp_path)
    values = a.metrics                       # compute_all, through the analysis
    grains = a.graph_with_metrics.grains
    for m in R.METRICS:
        if m.computed_by:                    # several runs: grainlab scaling
            continue
        for column in m.columns:
            assert column in grains.columns, f"{m.name}: column {column} not computed"
        for key in m.summary:
            assert key in values, f"{m.name}: value {key} not computed"
            if m.optional:                   # a text but "computed" says why it is not
                assert values[key] == "computed" or not isinstance(values[key], str), \
                    f"{m.name}: {values[key]}"
    assert set(METRIC_COLUMNS) <= set(grains.columns)
    # every problem is evaluated, and available with these inputs
    found = a.summary["problems"]
    assert list(found) == list(R.PROBLEM_ORDER)
    assert all(found[name]["available"] for name in R.PROBLEM_ORDER)


def test_compute_all_without_optional_inputs_says_what_is_missing(tmp_path):
    g = gl.load(two_node_trace(tmp_path / "two.parquet")).graph()
    values = compute_all(g)
    for m in R.METRICS:
        if m.computed_by:
            continue
        if not m.optional:                   # always there
            assert set(m.columns) <= set(g.grains.columns), m.name
            assert set(m.summary) <= set(values), m.name
    # without counters: the reason instead of a value; without a reference or
    # accesses: nothing (the analysis passes the trace's accesses)
    assert isinstance(values["memory_hierarchy_utilization"], str)
    assert isinstance(values["cpu_time"], str)
    assert "work_deviation" not in g.grains and "numa_locality" not in g.grains

"""One definition per number, named where it is shown (issue 32): the
parallelism of the whole run (work / span from the program's start to its
exit) and of the parallel part (the serial start and end left out) are two
numbers. One real recorded trace goes through `grainlab analyze --json`,
`grainlab analyze` and the web app in Chromium (header, Summary, Scaling):
every parallelism number shown carries one of the two names, and equals the
metric of that name; no number is shown as a bare "parallelism"."""
from __future__ import annotations

import json
import re

import pytest

import grainlab as gl
from conftest import grainlab
from test_serve import Server, browser, shown_text, wait_for  # noqa: F401 (fixture)
from test_scaling_view import TRACES

pytestmark = pytest.mark.timeout(600)

WHOLE, PART = "parallelism of the whole run", "parallelism of the parallel part"
NAMED = re.compile(r"parallelism of the (whole run|parallel part)( as replayed \(guarded\))? "
                   r"([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)")
# a parallelism number without its name ("burdened parallelism" is predict's own)
BARE = re.compile(r"(?<!burdened )\bparallelism:?\s+[0-9]")


@pytest.fixture(scope="module")
def trace(record):
    # sort fills its array serially (ms) before a region of ~2k tasks: the
    # whole run's parallelism ~2, the parallel part's ~17 (fib 16 5's region
    # of tiny grains was at times no more parallel than its whole run)
    return record("sort", 131072, 2048, 2048, 20, threads=2)


@pytest.fixture(scope="module")
def metric(trace):
    """{name: value} from the metrics themselves (in process), each checked
    against a second computation: predict's replay of the whole run and of
    the parallel part (unguarded), which weighs the same nodes its own way."""
    a = gl.analyze(trace.path)
    values = {WHOLE: a.metrics["parallelism"], PART: a.metrics["parallel_part"]["parallelism"]}
    whole = a.predict([1], guard="none", whole=True)
    part = a.predict([1], guard="none")
    assert whole["parallelism"] == pytest.approx(values[WHOLE], rel=1e-9)
    assert part["parallelism"] == pytest.approx(values[PART], rel=1e-9)
    # two different numbers: a view showing one under the other's name fails
    assert abs(values[WHOLE] / values[PART] - 1) > 0.02, values
    return values


def named(text: str, where: str) -> dict:
    """{name: value shown} of every named parallelism in `text`; none bare."""
    assert not BARE.search(text), f"{where}: a parallelism without its name: {text!r}"
    found = {}
    for part, guarded, value in NAMED.findall(text):
        name = f"parallelism of the {part}" + (guarded or "")
        found.setdefault(name, set()).add(float(value))
    assert found, f"{where}: no named parallelism in {text!r}"
    return found


def check(shown: dict, metric: dict, where: str, names=(WHOLE, PART)):
    """Each name expected is shown, with the metric's value to the 3
    significant digits shown."""
    for name in names:
        assert name in shown, f"{where}: {name} not shown ({shown})"
    for name, values in shown.items():
        if name not in metric:        # the replay's guarded value, named so: not the metric's
            assert name.endswith("as replayed (guarded)"), (where, name)
            continue
        for v in values:
            assert v == pytest.approx(metric[name], rel=5e-3), (where, name, v, metric[name])


def test_analyze_json_and_text_name_each_parallelism(trace, metric):
    r = grainlab("analyze", "--json", trace.path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["parallelism"] == pytest.approx(metric[WHOLE], rel=1e-12)
    assert doc["parallel_part"]["parallelism"] == pytest.approx(metric[PART], rel=1e-12)
    # the span's parts add up to it, and the grains are one part among them
    parts = doc["span_parts"]
    assert sum(parts.values()) == doc["span_ns"]
    assert parts["grains"] == doc["critical_path_time"]["grains_ns"]
    text = grainlab("analyze", trace.path).stdout
    check(named(text, "analyze"), metric, "analyze")
    assert "of the span in grains" not in text
    assert re.search(r"^  span +[0-9.]+ \w+: serial start ", text, re.M), text


def test_the_app_names_each_parallelism_in_header_summary_and_scaling(browser, trace, metric):  # noqa: F811
    s = Server(trace.path)
    try:
        d = browser
        d.get(s.url + "?view=summary")
        header = shown_text(d, "#run-summary", what="header")
        check(named(header, "header"), metric, "header")
        span = shown_text(d, "#span-parts", what="the span's parts")
        assert "serial start" in span and "grains" in span and "of the span in" not in span
        summary = shown_text(d, "#summary .summary-kv", what="summary")
        check(named(summary.replace("\n", " "), "summary"), metric, "summary")
        d.get(s.url + "?view=scaling")
        note = shown_text(d, "#scaling-parallelism", what="scaling note")
        check(named(note, "scaling note"), metric, "scaling note")
        drawn = wait_for(lambda: d.execute_script(TRACES % "#predict-fig"), what="prediction")
        legend = " · ".join(t["name"] for t in drawn if t["name"])
        # the prediction replays the parallel part: its line is that one
        check(named(legend, "scaling figure"), metric, "scaling figure", names=())
        assert any(n.startswith(PART) for n in named(legend, "scaling figure")), legend
    finally:
        s.stop()

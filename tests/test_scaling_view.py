"""The web app's Scaling view (issues 22 and 24), in real Chromium like the
other views (tests/test_serve.py): the predicted speed-up drawn equals
`grainlab predict --json`, the measured speed-up with --runs equals
`grainlab scaling --json`, and without --runs the view says how to add them."""
from __future__ import annotations

import json

import pytest

from conftest import grainlab
from grainlab.app.views.scaling import CORES
from test_serve import Server, browser, shot, shown_text, wait_for  # noqa: F401 (fixture)

pytestmark = pytest.mark.timeout(600)

# the traces as plotly drew them (_fullData: arrays decoded from plotly.py's binary form)
TRACES = """
const el = document.querySelector('%s .js-plotly-plot');
return el && el._fullData && el._fullData.length ?
    el._fullData.map(t => ({name: t.name, x: Array.from(t.x || []), y: Array.from(t.y || [])}))
    : null;
"""


def cli_json(*args):
    r = grainlab(*args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_predicted_and_measured_speedups_are_the_commands(browser, record):  # noqa: F811
    one = record("sparselu", "single", "8", "16", threads=1)
    two = record("sparselu", "single", "8", "16", threads=2)
    s = Server(one.path, "--runs", two.path)
    try:
        d = browser
        d.get(s.url + "?view=scaling")
        drawn = wait_for(lambda: d.execute_script(TRACES % "#predict-fig"), what="prediction")
        pred = cli_json("predict", "--cores", ",".join(map(str, CORES)), one.path)
        line = next(t for t in drawn if t["name"] == "predicted")
        assert line["x"] == list(CORES)
        assert line["y"] == pytest.approx(pred["speedup"])
        measured = wait_for(lambda: d.execute_script(TRACES % "#scaling-speedup-fig"),
                            what="measured speed-up")
        runs = cli_json("scaling", one.path, two.path)["runs"]
        speedups = [r["speedup"] for r in sorted(runs, key=lambda r: r["threads"])]
        line = next(t for t in measured if t["name"] == "speed-up")
        assert line["x"] == [1, 2]
        assert line["y"] == pytest.approx(speedups)
        assert d.find_elements("css selector", "#scaling-breakdown-fig")
        assert not d.find_elements("css selector", "#scaling-note")
        shot(d, "scaling")
    finally:
        s.stop()


def test_without_runs_the_view_says_how_to_add_them(browser, record):  # noqa: F811
    s = Server(record("fib", 12, 4, threads=1).path)
    try:
        d = browser
        d.get(s.url + "?view=scaling")
        note = shown_text(d, "#scaling-note", what="scaling note")
        assert "--runs" in note
        assert wait_for(lambda: d.execute_script(TRACES % "#predict-fig"), what="prediction")
    finally:
        s.stop()

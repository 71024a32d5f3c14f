"""The web app's data-locality view (issue 23), in real Chromium like the
other views (tests/test_serve.py): KRD bars equal `grainlab krd --json`, two
runs side by side with --compare, and a run without data accesses says how
to add them."""
from __future__ import annotations

import json

import pytest

from conftest import grainlab
from test_serve import Server, browser, shot, shown_text, text, wait_for  # noqa: F401 (fixture)

pytestmark = pytest.mark.timeout(600)

# the bars' data as plotly holds it in the page
BARS = """
const el = document.querySelector('#krd-fig .js-plotly-plot');
return el && el.data ? el.data.map(t => ({name: t.name, x: t.x, y: Array.from(t.y)})) : null;
"""


def krd_json(path):
    r = grainlab("krd", "--json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_krd_bars_of_two_runs_side_by_side(browser, record):  # noqa: F811
    row = record("krd_matmul", "4", "8", "row", threads=1)
    z = record("krd_matmul", "4", "8", "z", threads=1)
    s = Server("--compare", row.path, z.path)
    try:
        d = browser
        d.get(s.url + "?view=locality")
        bars = wait_for(lambda: d.execute_script(BARS), what="KRD bars")
        assert [b["name"] for b in bars] == ["close", "near", "far", "inf"]
        # x: (run, domain) pairs; the reference run first, then this one
        assert bars[0]["x"][0] == ["reference", "this run"]
        for run, path in (("reference", row.path), ("this run", z.path)):
            h = krd_json(path)
            at = bars[0]["x"][0].index(run)
            for b in bars:
                assert b["y"][at] == pytest.approx(100 * h[b["name"]] / h["accesses"])
        assert "Kernel Reuse Distance" in text(d, "#krd-fig")
        assert "No page placement" in text(d, "#locality-note")
        shot(d, "locality")
    finally:
        s.stop()


def test_run_without_accesses_says_how_to_add_them(browser, record):  # noqa: F811
    s = Server(record("fib", 12, 4, threads=1).path)
    try:
        d = browser
        d.get(s.url + "?view=locality")
        note = shown_text(d, "#locality-note", what="locality note")
        assert "no data accesses" in note and "grain_data" in note
        assert not d.find_elements("css selector", "#krd-fig")
    finally:
        s.stop()

"""`grainlab serve` answers while it analyzes (grainlab/app/loading.py): its
URL shows the run's facts from the footer and each analysis step as it
starts, then becomes the app. Checked in real headless Chromium against a
real threaded server, with the real app switched in; the page's facts against
the Parquet footer read here; and the CLI's order of lines."""
from __future__ import annotations

import re
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from werkzeug.test import Client

from conftest import REPO
from test_serve import SHOTS, _browser, wait_for

from grainlab.app.loading import StepLog, Switch, footer_facts, loading_app

pytestmark = pytest.mark.timeout(300)

TRACE = REPO / "tests" / "data" / "fib14_t2_single_on_thread1.parquet"


def _footer():
    f = pq.ParquetFile(TRACE)
    import json
    counts = json.loads(f.metadata.metadata[b"grainlab.counts"])
    return f.metadata.num_rows, counts["task_creates"]


def test_loading_page_answers_with_the_footer_and_the_steps():
    events, tasks = _footer()
    log = StepLog(enabled=False)
    client = Client(Switch(loading_app("t.parquet", footer_facts(TRACE), log)))
    page = client.get("/")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert f"<th>events</th><td>{events:,}</td>" in text
    assert f"<th>explicit tasks</th><td>{tasks:,}</td>" in text
    assert 'http-equiv="refresh"' in text            # it reloads itself until the app is there
    log("graph build")
    log("<script>x</script>")
    text = client.get("/").get_data(as_text=True)
    assert "graph build" in text
    assert "<script>x" not in text and "&lt;script&gt;x" in text
    other = client.get("/_dash-layout")
    assert other.status_code == 503 and other.headers["Retry-After"] == "1"


def test_switch_serves_the_app_it_is_given():
    switch = Switch(loading_app("t", [], StepLog(enabled=False)))
    client = Client(switch)
    assert "analyzing" in client.get("/").get_data(as_text=True)

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"the app"]
    switch.app = app
    assert client.get("/").get_data() == b"the app"


def test_footer_facts_of_a_file_that_is_no_trace_are_none(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(TRACE.read_bytes()[:5000])        # truncated: the analysis says so
    assert footer_facts(bad) == []
    assert footer_facts(tmp_path / "missing.parquet") == []


@pytest.fixture
def browser():
    yield from _browser()


def test_chromium_sees_the_steps_then_lands_on_the_app(browser):
    from grainlab.analysis.analysis import Analysis
    from grainlab.app import AppData, create_app
    from grainlab.commands.serve import _bind, _serve_in_background
    events, _ = _footer()
    sock = _bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    log = StepLog(enabled=False)
    switch = Switch(loading_app(TRACE.name, footer_facts(TRACE), log))
    server = _serve_in_background("127.0.0.1", port, switch)
    try:
        d = browser
        d.get(f"http://127.0.0.1:{port}/")
        facts = wait_for(lambda: d.find_element("id", "loading-facts").text, what="the facts")
        assert f"{events:,}" in facts
        log("loading the trace")
        wait_for(lambda: "loading the trace" in d.find_element("id", "loading-steps").text,
                 what="a step added after the page was opened")
        SHOTS.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(SHOTS / "serve-loading.png"))
        a = Analysis(TRACE, progress=log)
        switch.app = create_app(data=AppData(a, None, progress=log)).server
        # the page reloads itself and becomes the app, with no navigation here
        # (the app lands on its summary view: the graph's count is in the page, not shown)
        count = wait_for(lambda: d.find_elements("id", "problem-count")
                         and d.find_element("id", "problem-count")
                         .get_attribute("textContent").strip(),
                         what="the app after the analysis")
        assert count and "analyzing" not in d.title
        d.save_screenshot(str(SHOTS / "serve-after-loading.png"))
    finally:
        server.shutdown()


def test_cli_prints_where_to_watch_before_it_serves():
    proc = subprocess.Popen([sys.executable, "-m", "grainlab.cli", "serve", "--port", "0",
                             str(TRACE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        first = proc.stdout.readline()
        m = re.search(r"analyzing .*; progress at (http://\S+/)", first)
        assert m, first
        second = proc.stdout.readline()
        s = re.search(r"serving .* at (http://\S+/)", second)
        assert s and s.group(1) == m.group(1), second
    finally:
        proc.terminate()
        proc.wait(30)

"""`grainlab serve` logs no line per request (issue 32): the page polls
/_grainlab/alive every few seconds, and an access-log line for each drowned
what matters. The real CLI serves a real trace; several requests later, its
output (stdout and stderr) holds the URL line and no line naming a request."""
from __future__ import annotations

import re
import urllib.request

import pytest

from conftest import REPO
from test_serve import Server

pytestmark = pytest.mark.timeout(300)

TRACE = REPO / "tests" / "data" / "fib14_t2_single_on_thread1.parquet"
PATHS = ["_grainlab/alive"] * 5 + ["", "?view=summary", "_dash-layout", "_dash-dependencies",
                                    "assets/grainlab.css", "no-such-page"]
# werkzeug's access log: 127.0.0.1 - - [27/Nov/2026 21:00:00] "GET /x HTTP/1.1" 200 -
ACCESS = re.compile(r'"(GET|POST|HEAD) \S* HTTP/[0-9.]+"|\] "GET ')


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_requests_leave_no_line_in_the_servers_output():
    assert TRACE.exists()
    s = Server(TRACE)          # waits for its URL line and a first /_grainlab/alive
    try:
        statuses = [get(s.url + p) for p in PATHS]
    finally:
        s.stop()
    out, err = s.proc.stdout.read(), s.proc.stderr.read()
    # the requests were served (a path the app does not know gets the page)
    assert statuses == [200] * len(PATHS), statuses
    lines = [ln for ln in (out + err).splitlines() if ln.strip()]
    logged = [ln for ln in lines if ACCESS.search(ln)
              or any(p and p in ln for p in ("_grainlab/alive", "_dash-", "grainlab.css",
                                             "no-such-page"))]
    assert not logged, logged
    # what is left is a few lines, whatever the number of requests: start-up only
    assert len(lines) < 10, lines


def test_the_access_log_pattern_matches_werkzeugs_lines():
    """The check above can fail: werkzeug's own format is what it looks for."""
    assert ACCESS.search('127.0.0.1 - - [27/Nov/2026 21:00:00] "GET /_grainlab/alive '
                         'HTTP/1.1" 200 -')
    assert not ACCESS.search("grainlab: serving t.parquet at http://127.0.0.1:8050/")

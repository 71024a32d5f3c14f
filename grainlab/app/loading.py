"""What `grainlab serve` shows while the analysis runs: the run's facts from
the trace's footer and each analysis step as it starts, at the server's URL
from the first seconds on, instead of a URL that answers nothing for the
minute a 10^7-grain trace takes to analyze. When the analysis is done the
same URL serves the app (`Switch`), and the page, which reloads itself every
second, lands on it. An analysis that fails stops the server and ends the
command with its one-line error, as before.

A plain WSGI app (no Dash): it must answer while the analysis holds the
process's cores, and costs nothing beside it."""
from __future__ import annotations

import html
import threading
import time
from pathlib import Path

from ..progress import Progress


class StepLog(Progress):
    """A Progress that also keeps its steps (elapsed seconds, message) for
    the loading page."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def __call__(self, message: str):
        with self._lock:
            self.steps.append((time.monotonic() - self.t0, message))
        super().__call__(message)

    def snapshot(self) -> tuple[list, float]:
        with self._lock:
            return list(self.steps), time.monotonic() - self.t0


def footer_facts(path) -> list[tuple[str, str]]:
    """(label, value) of what the trace's footer says about the run, read
    without reading events (empty when the file is not a finished trace:
    the analysis then says what is wrong)."""
    from ..errors import GrainlabError
    from ..trace.file import _open_parquet, _parse_metadata
    try:
        p = Path(path)
        parquet = _open_parquet(p)
        meta = _parse_metadata(p, parquet)
    except (GrainlabError, OSError):    # the analysis says what is wrong
        return []
    counts = meta.get("counts") if isinstance(meta.get("counts"), dict) else {}
    facts = [("trace", str(path)),
             ("size", f"{p.stat().st_size / 2**20:,.1f} MiB"),
             ("events", f"{parquet.metadata.num_rows:,}")]
    if isinstance(counts.get("task_creates"), int):
        facts.append(("explicit tasks", f"{counts['task_creates']:,}"))
    if isinstance(meta.get("threads"), int):
        facts.append(("threads", str(meta["threads"])))
    command = meta.get("command")
    if isinstance(command, list) and command:
        facts.append(("command", " ".join(map(str, command))))
    if not meta.get("complete", False):
        facts.append(("run", f"did not end normally ({meta.get('end_reason', 'unknown')})"))
    return facts


def loading_app(title: str, facts: list, log: StepLog):
    """The WSGI app of the loading page (every other path: 503, retry)."""

    def app(environ, start_response):
        if environ.get("PATH_INFO", "/") not in ("/", ""):
            start_response("503 Service Unavailable",
                           [("Content-Type", "text/plain; charset=utf-8"), ("Retry-After", "1")])
            return [b"grainlab: the analysis is still running\n"]
        body = _page(title, facts, *log.snapshot()).encode("utf-8")
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                  ("Cache-Control", "no-store"),
                                  ("Content-Length", str(len(body)))])
        return [body]
    return app


def _page(title, facts, steps, elapsed) -> str:
    e = html.escape
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in facts)
    done = [f"<li><span class=t>{t:6.1f} s</span> {e(m)}</li>" for t, m in steps]
    state = (f'<p id="loading-state">analyzing &mdash; {elapsed:.0f} s so far; '
             "this page becomes the app when the analysis is done</p>")
    return f"""<!doctype html><html><head><meta charset="utf-8">
<meta http-equiv="refresh" content="1">
<title>grainlab: analyzing {e(title)}</title><style>
body {{font: 15px system-ui, sans-serif; margin: 2em; color: #222}}
th {{text-align: left; padding-right: 1.5em; color: #555; font-weight: normal}}
ol {{padding-left: 1.2em}} .t {{color: #888; font-family: monospace}}
</style></head><body>
<h2>grainlab: {e(title)}</h2>
<table id="loading-facts">{rows}</table>
{state}
<ol id="loading-steps">{''.join(done)}</ol>
</body></html>"""


class Switch:
    """A WSGI app that is another one, replaceable while serving: the
    loading page, then the app."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        return self.app(environ, start_response)

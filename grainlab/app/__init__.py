"""`grainlab serve`: the grain graph in the browser (a Dash app).

    from grainlab.app import create_app
    app = create_app(gl.analyze("fib.parquet"))
    app.run(host="127.0.0.1", port=8050)

Everything shown comes from one `grainlab.Analysis` (and, with --compare, its
`Comparison` against a reference run): the app lays grains out and colours
them; it never computes a metric its own way. View state lives in the URL.
"""
from __future__ import annotations

from .data import AppData
from .server import create_app

__all__ = ["AppData", "create_app"]

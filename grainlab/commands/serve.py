"""`grainlab serve TRACE [--compare REF] [--port N] [--host H]`: the grain graph
in the browser (grainlab.app)."""
from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from pathlib import Path

from ..errors import UsageError
from ._output import warn_incomplete

HELP = "show the grain graph and its problems in a web browser"
EPILOG = """\
examples:
  grainlab serve fib.parquet                      # then open the printed URL
  grainlab serve --port 8060 fib.parquet
  grainlab serve --compare one-thread.parquet two-threads.parquet
  grainlab serve one.parquet --runs two.parquet four.parquet   # + measured scaling
  grainlab serve run.0.parquet --ranks run.*.parquet           # + an MPI run's ranks

Views: summary, grain graph (one colouring per problem; the critical path in red),
source locations, parallelism over time, threads (Gantt), data locality, scaling
(predicted from this trace; measured with --runs), compare (with --compare) and
ranks (with --ranks). Click a
grain for its details and source lines. The URL holds the view, threshold,
selection and zoom: share it to show someone what you saw. Ctrl-C stops.
"""


def add_parser(subparsers):
    p = subparsers.add_parser("serve", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="trace file written by `grainlab record`")
    p.add_argument("--compare", metavar="REF",
                   help="reference run of the same program (e.g. 1 thread): work deviation")
    p.add_argument("--runs", nargs="+", metavar="TRACE",
                   help="the same program at other thread counts: the Scaling view then shows "
                        "where the speed-up went (grainlab scaling)")
    p.add_argument("--ranks", nargs="+", metavar="TRACE",
                   help="the traces of this trace's MPI run (one per rank): a Ranks view "
                        "(grainlab ranks)")
    p.add_argument("--weigh", choices=("wall", "cpu"), default="wall",
                   help="grains weigh their wall-clock time (default) or their CPU time "
                        "(a trace recorded with `grainlab record --cpu-time`)")
    p.add_argument("--port", type=int, default=8050, help="port (default 8050; 0 = any free)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..analysis.analysis import Analysis
    from ..app import AppData, create_app
    from ..app.loading import StepLog, Switch, footer_facts, loading_app
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: expected 0..65535")
    if not _loopback(args.host):
        print(f"grainlab: warning: serving on {args.host}: anyone who can reach this machine "
              "can see the trace and the source lines it names", file=sys.stderr)
    from .analyze import _check_memory
    _check_memory(args.trace, serve=True)   # a run that cannot fit: one line, before the port
    sock = _bind(args.host, args.port)     # a taken port fails now, before the long load
    port = sock.getsockname()[1]
    sock.close()
    shown = f"[{args.host}]" if ":" in args.host else args.host
    # one line per request (the page polls /_grainlab/alive every few seconds)
    # drowns what matters: only the server's warnings and errors
    import logging
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    # The URL answers from now on: the run's facts and the analysis's steps
    # (grainlab/app/loading.py), then the app at the same address.
    progress = StepLog()
    switch = Switch(loading_app(Path(args.trace).name, footer_facts(args.trace), progress))
    server = _serve_in_background(args.host, port, switch)
    try:
        print(f"grainlab: analyzing {args.trace}; progress at http://{shown}:{port}/",
              flush=True)
        a = Analysis(args.trace, weigh=args.weigh, progress=progress)
        comparison = None
        if args.compare:
            ref = Analysis(args.compare, weigh=args.weigh, progress=progress)
            from .compare import check_same_program
            check_same_program(ref.trace, a.trace)
            comparison = a.compare(ref)
        scaling = ranks = None
        if args.runs:
            from ..analysis.analysis import scaling as scaling_of
            scaling = scaling_of([a, *args.runs], progress=progress)
        if args.ranks:
            from ..cluster.ranks import ranks as rank_set
            ranks = rank_set(list(args.ranks), progress=progress)
            for trace, error in ranks.failed.items():
                print(f"grainlab: skipped {trace}: {error}", file=sys.stderr)
        data = AppData(a, comparison, progress=progress, scaling=scaling, ranks=ranks)
        warn_incomplete(a)
        switch.app = create_app(data=data).server
        print(f"grainlab: serving {args.trace} at http://{shown}:{port}/  (Ctrl-C stops)",
              flush=True)
        server.thread.join()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return 0


def _serve_in_background(host: str, port: int, app):
    """A threaded WSGI server of `app` on host:port, serving from a daemon
    thread (`.thread`) while the caller analyzes."""
    import threading

    from werkzeug.serving import make_server
    try:
        server = make_server(host, port, app, threaded=True)
    except OSError as e:        # taken between the probe and now
        raise UsageError(f"cannot serve on {host}:{port}: {e.strerror} "
                         "(choose another with --port, or --port 0 for any free one)") from None
    server.thread = threading.Thread(target=server.serve_forever, name="grainlab-serve",
                                     daemon=True)
    server.thread.start()
    return server


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
    except OSError as e:
        s.close()
        raise UsageError(f"cannot serve on {host}:{port}: {e.strerror} "
                         "(choose another with --port, or --port 0 for any free one)") from None
    return s

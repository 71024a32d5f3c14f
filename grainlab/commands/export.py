"""`grainlab export TRACE --graphml OUT | --perfetto OUT | --svg OUT | --png OUT`:
the grain graph as GraphML (yEd, Cytoscape), as a Perfetto / Chrome trace
(JSON), or drawn as the thesis draws it (SVG / PNG, the web app's layout:
grainlab.export.drawing)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..analysis.analysis import Analysis
from ..errors import GrainlabError, UsageError
from ..export.drawing import NODE_BUDGET, OWNER_BUDGET
from ..outpath import resolve_output, temporary_beside
from ._output import Progress, warn_incomplete

HELP = "export the grain graph as GraphML, Perfetto JSON, or a drawing (SVG, PNG)"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "export", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
        epilog="examples:\n"
               "  grainlab export fib.parquet --graphml fib.graphml\n"
               "  grainlab export fib.parquet --graphml fib.graphml --reduced\n"
               "  grainlab export fib.parquet --perfetto fib.json   "
               "# open in https://ui.perfetto.dev\n"
               "  grainlab export fib.parquet --svg fib.svg --depth 4 --problem load_balance\n"
               "  grainlab export fib.parquet --png fib.png --reduced\n"
               "  grainlab export fib.parquet --otf2 fib-otf2   # vampir fib-otf2/traces.otf2\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="trace file written by `grainlab record`")
    p.add_argument("--graphml", metavar="OUT", help="write the grain graph as GraphML")
    p.add_argument("--perfetto", metavar="OUT",
                   help="write a Chrome trace-event JSON file (threads, grains, flows)")
    p.add_argument("--otf2", metavar="DIR", help="write an OTF2 archive into DIR (anchor "
                   "DIR/traces.otf2) for Vampir and the Score-P tools: one location per thread, "
                   "enter/leave per grain fragment and runtime call, task create/complete")
    p.add_argument("--svg", metavar="OUT", help="write the grain graph drawn as the "
                   "thesis draws it (the web app's layout) as SVG")
    p.add_argument("--png", metavar="OUT", help="the same drawing as PNG (needs Chromium)")
    p.add_argument("--fit", metavar="WIDTHxHEIGHT",
                   help="drawing: make the whole picture this size in px (e.g. 1100x850 "
                        "for a page, 1600x900 for a slide): columns narrowed, labels that "
                        "would overlap left out (default: 1000 px of drawing, at most "
                        "2400 px wide)")
    p.add_argument("--reduced", action="store_true",
                   help="GraphML / drawing of the reduced graph (fragments, forks and "
                        "book-keeping grouped; for display of large graphs)")
    p.add_argument("--depth", type=int, metavar="N", help="drawing: collapse every "
                   "subtree below tree level N into one summary node (default: as "
                   "deep as %d grains / %d nodes allow)" % (OWNER_BUDGET, NODE_BUDGET))
    p.add_argument("--time", choices=["dag", "wall"], default="dag",
                   help="drawing: DAG time (each node starts where its predecessors "
                        "end; default) or wall-clock time")
    p.add_argument("--problem", metavar="NAME", default="parallel_benefit",
                   help="drawing: the problem whose grains are filled by severity "
                        "(default parallel_benefit; 'none' for structure only)")
    p.add_argument("--no-metrics", action="store_true",
                   help="skip computing metrics (export graph columns only)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run)


def run(args) -> int:
    drawing = args.svg or args.png
    if not args.graphml and not args.perfetto and not drawing and not args.otf2:
        raise UsageError("export: give --graphml OUT, --perfetto OUT, --otf2 DIR, --svg OUT "
                         "and/or --png OUT")
    if args.reduced and not (args.graphml or drawing):
        raise UsageError("export: --reduced applies to --graphml, --svg and --png only")
    fit = _parse_fit(args.fit)
    if args.fit and not drawing:
        raise UsageError("export: --fit applies to --svg and --png only")
    if args.depth is not None and args.depth < 0:
        raise UsageError("export: --depth must be >= 0")
    for out in (args.graphml, args.perfetto, args.svg, args.png):
        if out:
            resolve_output(out, "the export")      # before the long analysis

    if args.otf2:
        from ..export.otf2_archive import import_otf2, prepare_directory
        import_otf2()                                  # before the long analysis
        if Path(args.otf2).exists():
            prepare_directory_check(Path(args.otf2), prepare_directory)
    progress = Progress(quiet=args.quiet)
    a = Analysis(args.trace, progress=progress)
    g = graph_for_export(a, metrics=not args.no_metrics or bool(drawing))
    if drawing:
        _drawings(args, a, g, progress, fit)
    if args.graphml:
        progress(f"writing {args.graphml}")
        from ..export import write_graphml
        info = _atomic(Path(args.graphml), lambda p: write_graphml(g, p, reduced=args.reduced))
        print(f"{args.graphml}: GraphML{' (reduced)' if args.reduced else ''}, "
              f"{info['nodes']} nodes, {info['edges']} edges, {_mb(info['bytes'])}")
    if args.perfetto:
        progress(f"writing {args.perfetto}")
        from ..export import write_perfetto
        info = _atomic(Path(args.perfetto), lambda p: write_perfetto(g, p))
        print(f"{args.perfetto}: trace-event JSON, {info['grain_slices']} grain slices, "
              f"{info['slices']} slices, {info['flows']} flows, {_mb(info['bytes'])}")
    if args.otf2:
        progress(f"writing {args.otf2}")
        from ..export.otf2_archive import write_otf2
        info = write_otf2(g, Path(args.otf2))
        print(f"{info['anchor']}: OTF2, {info['locations']} locations, {info['regions']} regions, "
              f"{info['events']} events ({sum(info['fragments'].values())} grain fragments)"
              + (f"; {info['clipped']} interval(s) cut at their parent's end" if info['clipped'] else ""))
    return 0


def prepare_directory_check(out: Path, prepare) -> None:
    """The checks of prepare_directory before the analysis, without removing anything."""
    import tempfile
    if not out.is_dir():
        prepare(out)                                   # raises: not a directory
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe"
        probe.mkdir()
        for name in os.listdir(out):
            (probe / name).touch()
        prepare(probe)


def _parse_fit(text):
    """(width, height) of --fit WIDTHxHEIGHT, or None."""
    if not text:
        return None
    import re
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if not m or not (200 <= int(m.group(1)) <= 20000 and 200 <= int(m.group(2)) <= 20000):
        raise UsageError(f"export: --fit takes WIDTHxHEIGHT in px, each 200..20000 "
                         f"(e.g. 1600x900), not {text!r}")
    return int(m.group(1)), int(m.group(2))


def _drawings(args, a, g, progress, fit=None):
    from ..export.drawing import GrainLayout, problem_severity
    from ..export.svg import write_png, write_svg
    sev = problem_severity(a, args.problem)
    d = GrainLayout(g).draw(mode=args.time, depth="auto" if args.depth is None else args.depth,
                            fragments=args.reduced, forks=args.reduced,
                            bookkeeping=args.reduced, severity=sev)
    title = f"{Path(args.trace).name}: grain graph" + (
        f", {args.problem} problems filled by severity" if sev is not None else "")
    c = d.counts()
    what = ", ".join(f"{c[k]} {k}" for k in ("fragment", "chunk", "fork", "join",
                                              "bookkeeping", "summary") if c.get(k))
    size = dict(width=fit[0], height=fit[1], fit=True) if fit else {}
    for out, write, kind in ((args.svg, write_svg, "SVG"), (args.png, write_png, "PNG")):
        if out:
            progress(f"writing {out}")
            info = _atomic(Path(out), lambda p, w=write: w(d, p, title=title, **size))
            print(f"{out}: {kind}, {what}; {len(d.edges)} edges, {_mb(info['bytes'])}")


def graph_for_export(a, metrics=True):
    """The analysis's grain graph with a `source` column (file:line (function))
    for labels and, unless `metrics` is False, every metric column."""
    g = a.graph
    g.grains["source"] = a.locations.to_numpy()   # before the metrics: column order as ever
    if metrics:
        g = a.graph_with_metrics
    warn_incomplete(a)
    return g


def _atomic(out: Path, write):
    """Write to a temporary file next to `out` and rename: no half-written
    export is left behind by an error or ^C."""
    target = resolve_output(out, "the export")      # links followed, regular files only
    tmp = temporary_beside(target)
    try:
        info = write(tmp)
        os.replace(tmp, target)
    except OSError as e:
        raise GrainlabError(f"{out}: cannot write ({e.strerror or e})") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return info


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"

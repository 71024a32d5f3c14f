"""`grainlab info TRACE [--json]`: what a trace holds."""
from __future__ import annotations

import argparse
import json
import sys

from ..trace.scan import scan
from ..trace.runtime_info import short_name

HELP = "summarize a trace (events, threads, tasks, chunks, ...)"


def add_parser(subparsers):
    p = subparsers.add_parser(
        "info", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
        epilog="examples:\n  grainlab info fib.parquet\n"
               "  grainlab info --json fib.parquet | jq .tasks",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="trace file written by `grainlab record`")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object instead of text")
    p.set_defaults(run=run)


def run(args) -> int:
    # streamed: the checks and counts of load() + summary(), in bounded memory
    trace = scan(args.trace)
    summary = trace.summary()
    if args.json:
        print(json.dumps(summary))
    else:
        print(render(summary))
    if not trace.complete:
        print(f"grainlab: warning: {trace.path} is incomplete: "
              + "; ".join(trace.problems), file=sys.stderr)
    return 0


MAX_REGION_LINES = 20


def _region_lines(regions: list) -> list:
    if not regions:
        return []
    out = [f"           {'#':>5} {'start ms':>10} {'duration ms':>12} {'team':>5}  location"]
    for r in regions[:MAX_REGION_LINES]:
        dur = "unfinished" if r["duration_ns"] is None else f"{r['duration_ns'] / 1e6:.3f}"
        out.append(f"           {r['region']:>5} {r['begin_ns'] / 1e6:>10.3f} {dur:>12} "
                   f"{r['team']:>5}  {r['location']}{'  (nested)' if r['nested'] else ''}")
    if len(regions) > MAX_REGION_LINES:
        out.append(f"           ... {len(regions) - MAX_REGION_LINES} more (--json lists all)")
    return out


def _launch_lines(s: dict) -> list:
    """`rank       2 of 4 on node7` for a rank of an MPI run (and `host` alone
    otherwise, when the trace recorded it)."""
    if "rank" in s:
        size = f" of {s['world_size']}" if s.get("world_size") is not None else ""
        return [f"rank       {s['rank']}{size} on {s.get('host', 'an unknown host')}"]
    return [f"host       {s['host']}"] if "host" in s else []


def render(s: dict) -> str:
    ms = s["duration_ns"] / 1e6
    lines = [
        f"trace      {s['path']}",
        f"command    {' '.join(s['command']) if isinstance(s['command'], list) else s['command']}",
        *[f"exec'd     {' '.join(map(str, c)) if isinstance(c, list) else c}"
          for c in s.get("exec_commands", [])],
        f"status     {'complete' if s['complete'] else 'INCOMPLETE'} ({s['end_reason']})",
        f"runtime    {s['runtime'] or 'unknown'}"
        + (f" ({short_name(s['runtime_library'])}: {s['runtime_library']})"
           if s.get("runtime_library") else ""),
        *([f"           reports less: {'; '.join(s['runtime_limitations'])}"]
          if s.get("runtime_limitations") else []),
        *_launch_lines(s),
        f"duration   {ms:.3f} ms over {s['threads']} thread(s)",
        f"events     {s['events']} in {s['row_groups']} row group(s), {s['flushes']} flush(es)",
        f"regions    {s['parallel_regions']} parallel region(s), {s['implicit_tasks']} implicit task(s)"
        + (" (`analyze --region N` analyzes one)" if s.get("region_list") else ""),
        *_region_lines(s.get("region_list") or []),
        f"tasks      {s['tasks']} explicit ({s['undeferred_tasks']} undeferred, "
        f"{s['final_tasks']} final, {s['untied_tasks']} untied, "
        f"{s['tasks_with_dependences']} with dependences), max depth {s['max_task_depth']}",
        f"loops      {s['loops']} instance(s): {s['chunks']} chunk(s) "
        f"({s['inferred_chunks']} inferred) covering {s['iterations']} iteration(s)",
        f"sync       {s['taskwaits']} taskwait(s), {s['taskgroups']} taskgroup(s), "
        f"{s['barriers']} barrier(s)",
        *([f"data       {s['data_accesses']} access(es) annotated with grain_data() "
           "(`grainlab krd`)"] if s.get("data_accesses") else []),
        f"counters   {', '.join(s['counters']) or 'none'}"
        + (f" (unavailable: {', '.join(map(str, s['unavailable_counters']))})"
           if s['unavailable_counters'] else ""),
    ]
    if s["problems"]:
        lines.append("problems   " + "; ".join(s["problems"]))
    return "\n".join(lines)

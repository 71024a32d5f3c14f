"""Build the fragment-level grain graph from a trace (docs/graph-model.md).

Glossary (the words the builder's modules share)
  owner      a task whose chain holds nodes: explicit tasks 0..T-1 (creation
             order), then contexts T..E-1 (initial tasks, implicit tasks).
             Owners own time; grains are explicit tasks and loop chunks
             (chunks are grains but not owners: their implicit task owns them).
  context    an initial or implicit task: the serial/team frame, not a grain.
  row        one event, in per-thread time order (events.Rows). `grank` is
             its global order key: its position, or its rank in time when
             tasks migrate between threads (untied).
  segment    the time from a row to its thread's next row, credited to the
             owner running on the thread after the row.
  boundary   an event that cuts its owner's chain: creation, sync, loop,
             region begin/end.
  slot       a node-to-be that a boundary opens in its owner's chain, keyed
             (owner, row, sub); its *receiving* slots take the owner's time.
  chain      an owner's slots (then nodes) in order; `seq` is the position.
  shared     a team barrier instance: the k-th barrier of every implicit task
             of a region merges into one node, owned by nobody.
  waiter     the join node a grain's synchronization edge goes to.
  stride     the multiplier that packs (owner, row) into one sortable
             integer key (columns.pack); larger than every row key.
  public id  grains 0..G-1 (tasks, then chunks), contexts G..G+C-1.

Phases (one module each; every phase takes and returns small named structures):
  owners.find_owners      Owners  who owns time; their identity forest
  events.load_rows        Rows    rows in per-thread order, running owner, segments
  owners.find_chunks      Chunks  loop chunks and their loop instances
  slots.open_slots        Slots   every boundary's slots, in chain order (the
                                  explicit tasks' on a thread meanwhile)
  slots.credit_segments   Credit  each segment to its owner's latest receiving slot
  nodes.node_ids          NodeIds which node each slot becomes
  nodes.make_nodes        Nodes   slots -> node columns (team barriers merged)
  edges.make_edges        Edges   continuation, creation, synchronization,
                                  dependence (on a thread meanwhile)
  nodes.join_weights              a join weighs its resume latency
  tables.slot_facts       SlotFacts   what the tables need of rows and slots (then
                                      both are dropped)
  tables.make_graph       GrainGraph  public tables; identity strings on a thread
  critical_path                       the critical path, on a thread meanwhile
"On a thread meanwhile": under OVERLAP_EVENTS events, else one after the other.
Everything is column operations: no Python loop over rows, slots or grains.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from .. import array_cache
from .critical_path import annotate_critical_path, longest_path_and_order
from .edges import make_edges
from .events import load_rows
from .model import GrainGraph
from .nodes import join_weights, make_nodes, node_ids
from .owners import find_chunks, find_owners
from .slots import JOIN, PROGRAM_END, REGION_END, OwnedRows, credit_segments, open_slots
from .tables import make_graph, slot_facts

# Three phases need less than the one before them, and run on a second
# thread beside it (numpy releases the GIL): the explicit tasks' slots beside
# the other slots; the edges, which need only which node each slot becomes,
# beside the node columns; the critical path, which needs only node times and
# edges, beside the public tables. fib(28), 4.1M events: 3.5 -> 2.7 s. But
# the builder's scratch (rows, slots) stays alive meanwhile: at uts's 20M
# events the critical path beside the tables took 1 GB more peak memory
# (7.4 -> 8.4 GB) and was slower, fresh memory being expensive here. From
# this many events on, one thing at a time (the threshold of the command
# line's memory profile too: grainlab/process_memory.py).
OVERLAP_EVENTS = 8_000_000


def build(trace, creation_quantile: float = 0.10, checkpoint=None,
          creation_cost=None) -> GrainGraph:
    """The grain graph of `trace` (a grainlab.trace.Trace). checkpoint: called
    between phases; it may raise to stop the build (the analysis validates
    the trace meanwhile: grainlab.trace.trace.load_checking).
    creation_cost: None (the estimate is the `creation_quantile` of the
    trace's creation gaps), or callable(gaps ns array) -> estimate ns: a
    trace analyzed in parts (grainlab.cluster.split) takes the whole run's
    estimate, so each part's forks weigh what they weigh in the whole."""
    check = checkpoint or (lambda: None)
    lane = ThreadPoolExecutor(1, thread_name_prefix="grainlab-build") \
        if len(trace.events) < OVERLAP_EVENTS else None
    try:
        return _build(trace, creation_quantile, check, lane, creation_cost)
    finally:
        if lane:
            lane.shutdown(wait=True)
        # the build's freed arrays, kept for its own reuse (grainlab/array_cache.py),
        # go back: the metrics' pandas tables come from malloc, not the cache,
        # and would otherwise add to the peak beside them
        array_cache.trim()


def _build(trace, creation_quantile, check, lane, creation_cost=None) -> GrainGraph:
    owners = find_owners(trace)
    check()
    rows, row_owner, other_owner = load_rows(trace.events, owners.of_rows, owners.clip,
                                             owners.untied)
    orows = OwnedRows(rows, row_owner, other_owner, stride=len(rows) + 2)
    chunks = find_chunks(rows, row_owner, orows.stride)
    check()
    slots = open_slots(orows, owners, chunks, creation_quantile, lane, creation_cost)
    check()
    ids = node_ids(slots, owners.E, chunks.K)
    edges = lane.submit(make_edges, orows, owners, slots, ids) if lane else None
    credit = credit_segments(orows, slots)
    # per-row segment columns are no longer needed: free them before the
    # node tables are built (peak memory at 10^7 grains)
    rows.seg = rows.seg_end = rows.owner_running = None
    check()
    nodes = make_nodes(slots, credit, orows, owners, ids)
    del credit
    check()
    edges = edges.result() if lane else make_edges(orows, owners, slots, ids)
    join_weights(nodes.columns, edges.src, edges.dst)
    found = lane.submit(longest_path_and_order, **_path_arrays(nodes.columns), src=edges.src,
                        dst=edges.dst) if lane else None
    facts = slot_facts(orows, owners, chunks, slots, nodes, edges)
    # drop the builder's largest scratch (rows, slots, which node each slot
    # became) before the public tables are made: the build's peak memory
    del orows, rows, row_owner, other_owner, slots, ids
    nodes.slot_node = None
    check()
    g, identity = make_graph(trace, owners, chunks, nodes, edges, facts, creation_quantile)
    del nodes, edges, facts
    annotate_critical_path(g, found.result() if found else None)
    if identity is not None:
        identity.attach(g)
    return g


def _path_arrays(c: dict) -> dict:
    """`critical_path.node_arrays` from the builder's node columns (codes)."""
    is_join = c["type"] == JOIN
    ends = (c["join_kind"] == REGION_END) | (c["join_kind"] == PROGRAM_END)
    return {"duration": c["duration"], "start": c["start"], "end": c["end"],
            "is_join": is_join, "released": is_join & ~ends}

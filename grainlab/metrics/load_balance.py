"""Load balance (thesis §5.4.2; DESIGN.md "Metrics").

  load_balance = longest grain of the group / median length of the group's
                 chains of consecutive grains

Groups: sibling tasks joined at the same join and created by the same task
construct (like is compared with like: an init task beside compute tasks is its
own group), or the chunks of one loop instance.
Chains: in a loop instance, the chunks one thread ran one after another (a chain's
length is the sum of their work); sibling tasks are each their own chain (no
sibling runs "after" another in the graph). Every grain of a group gets the
group's value. Dimensionless; about 1 or below is balanced; much greater than 1
means one grain approaches the makespan of the whole group.
"""
from __future__ import annotations

import numpy as np

from .contract import is_one_of
from .groups import group_max, group_median, sibling_groups

COLUMN = "load_balance"


def compute(g, group=None) -> None:
    """group: sibling_groups(g.grains, by_construct=True) when the caller has it."""
    gr = g.grains
    n = len(gr)
    if n == 0:
        gr[COLUMN] = np.zeros(0)
        return
    if group is None:
        group = sibling_groups(gr, by_construct=True)
    n_groups = int(group.max()) + 1
    work = gr["work"].to_numpy(np.float64)
    is_chunk = is_one_of(gr["kind"], "chunk")
    # chains: a task alone; the chunks of one loop instance run by one thread.
    # Only chunks need grouping (one sort of the chunks' keys, not of every
    # grain's): a task's chain is numbered after the chunk chains, in grain order.
    chain_of = np.empty(n, np.int64)
    chunks = np.flatnonzero(is_chunk)
    tasks = np.flatnonzero(~is_chunk)
    n_chunk_chains = 0
    if len(chunks):
        thread = gr["thread"].to_numpy(np.int64)[chunks]
        key = group[chunks] * (int(thread.max()) + 2) + thread + 1
        chain_id, chain_of[chunks] = np.unique(key, return_inverse=True)
        n_chunk_chains = len(chain_id)
    chain_of[tasks] = n_chunk_chains + np.arange(len(tasks))
    n_chains = n_chunk_chains + len(tasks)
    chain_len = np.bincount(chain_of, weights=work, minlength=n_chains)
    chain_group = np.empty(n_chains, np.int64)
    chain_group[chain_of] = group        # every grain of a chain is in its group
    median_chain = group_median(chain_group, chain_len)
    longest = group_max(group, work, n_groups)
    num, den = longest[group], median_chain[group]
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = np.where(den > 0, num / np.where(den > 0, den, 1.0),
                      np.where(num > 0, np.inf, 1.0))
    gr[COLUMN] = lb

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


def compute(g) -> None:
    gr = g.grains
    n = len(gr)
    if n == 0:
        gr[COLUMN] = np.zeros(0)
        return
    group = sibling_groups(gr, by_construct=True)
    n_groups = int(group.max()) + 1
    work = gr["work"].to_numpy(np.float64)
    is_chunk = is_one_of(gr["kind"], "chunk")
    # chains: a task alone; the chunks of one loop instance run by one thread
    thread = gr["thread"].to_numpy(np.int64)
    chain_key = np.where(is_chunk, group * (int(thread.max()) + 2) + thread + 1,
                         -1 - np.arange(n))
    chain_id, first = np.unique(chain_key, return_inverse=False, return_index=True)[0:2]
    chain_of = np.searchsorted(chain_id, chain_key)
    chain_len = np.bincount(chain_of, weights=work, minlength=len(chain_id))
    chain_group = group[first]
    median_chain = group_median(chain_group, chain_len)
    longest = group_max(group, work, n_groups)
    num, den = longest[group], median_chain[group]
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = np.where(den > 0, num / np.where(den > 0, den, 1.0),
                      np.where(num > 0, np.inf, 1.0))
    gr[COLUMN] = lb

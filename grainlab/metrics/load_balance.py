"""Load balance (thesis §5.4.2; DESIGN.md "Metrics").

  load_balance = longest grain of the group / median length of the group's
                 chains of consecutive grains

Groups: sibling tasks joined at the same join, or the chunks of one loop instance.
Chains: in a loop instance, the chunks one thread ran one after another (a chain's
length is the sum of their work); sibling tasks are each their own chain (no
sibling runs "after" another in the graph). Every grain of a group gets the
group's value. Dimensionless; about 1 or below is balanced; much greater than 1
means one grain approaches the makespan of the whole group.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .groups import sibling_groups

COLUMN = "load_balance"


def compute(g) -> None:
    gr = g.grains
    group = sibling_groups(gr)
    is_chunk = (gr["kind"].astype(str) == "chunk").to_numpy()
    # chain id: a chunk's chain is (group, thread); a task is its own chain
    chain_thread = np.where(is_chunk, gr["thread"].to_numpy(np.int64), -1 - np.arange(len(gr)))
    df = pd.DataFrame({"group": group, "chain": chain_thread,
                       "work": gr["work"].to_numpy(np.float64)})
    chains = df.groupby(["group", "chain"], sort=False)["work"].sum().reset_index()
    median_chain = chains.groupby("group", sort=False)["work"].median()
    longest = df.groupby("group", sort=False)["work"].max()
    num = longest.reindex(group).to_numpy()
    den = median_chain.reindex(group).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        lb = np.where(den > 0, num / np.where(den > 0, den, 1.0),
                      np.where(num > 0, np.inf, 1.0))
    gr[COLUMN] = lb

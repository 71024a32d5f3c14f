"""Hover text of grains and contexts, made for the ids a figure shows.

A figure shows at most a few thousand elements at a time (collapsed
subtrees, binned tracks), so the text is made when a figure asks for it,
not for every grain up front: at 10^7 grains the eager object array was
~1 GB of Python strings and tens of seconds before the first view.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


class HoverLabels:
    """`labels[ids]` is an object array of the hover text of those grain or
    context ids (numpy's indexing: a negative id counts from the end, as
    the eager array it replaces did)."""

    def __init__(self, g, locations: np.ndarray):
        self.g = g
        self.n_grains = len(g.grains)
        self.n_total = self.n_grains + len(g.contexts)
        self.locations = locations

    def __len__(self) -> int:
        return self.n_total

    def __getitem__(self, ids) -> np.ndarray:
        ids = np.asarray(ids, np.int64).ravel()
        if len(ids) and (ids.min() < -self.n_total or ids.max() >= self.n_total):
            raise IndexError(f"hover label ids outside 0..{self.n_total - 1}")
        ids = np.where(ids < 0, ids + self.n_total, ids)
        out = np.empty(len(ids), dtype=object)
        grain = ids < self.n_grains
        if grain.any():
            out[grain] = self._grains(ids[grain])
        if (~grain).any():
            out[~grain] = self._contexts(ids[~grain])
        return out

    def _grains(self, gid: np.ndarray) -> np.ndarray:
        gr = self.g.grains
        work_us = (gr["work"].to_numpy(np.float64)[gid] / 1e3).round(1).astype(str)
        kind = gr["kind"].iloc[gid].astype(str).to_numpy()
        if "identity" in gr:
            ident = gr["identity"].to_numpy()[gid].astype(str)
        else:
            # long identities are not made for every grain: a short
            # stand-in (the details panel shows the full one)
            ident = ("depth " + gr["depth"].to_numpy()[gid].astype(str) + ", child "
                     + gr["child_number"].to_numpy()[gid].astype(str) + " of #"
                     + gr["parent"].to_numpy()[gid].astype(str))
        return ("#" + gid.astype(str) + " " + kind.astype(object) + " " + ident + "<br>"
                + self.locations[gid].astype(object) + "<br>work " + work_us + " us")

    def _contexts(self, ids: np.ndarray) -> np.ndarray:
        cx = self.g.contexts
        if "identity" in cx:
            cid = cx["identity"].to_numpy(dtype=object)[ids - self.n_grains]
        else:
            cid = self.g.identities(cx.index.to_numpy()[ids - self.n_grains])
        return ("serial/team code " + pd.Series(cid, dtype=object).astype(str)).to_numpy()


def hover_text(labels, ids) -> np.ndarray:
    """The text of `ids` from a HoverLabels or any array of labels."""
    if isinstance(labels, HoverLabels):
        return labels[ids]
    return np.asarray(labels, dtype=object)[np.asarray(ids, np.int64)]

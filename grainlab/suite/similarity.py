"""Program similarity as in the thesis, §4.5.2 (BOTS characterization):

1. properties that describe the program, not the run length or the threads
   (`PROPERTIES`, derived from `grainlab characterize` rows: per-grain
   medians and ratios, join degree, critical-path share, depth, counters);
2. autoscaling (zero mean, unit variance per property);
3. PCA, keeping the components that explain >= 85% of the variance, their
   number checked by leave-one-out cross-validation (`loo_press`);
4. Ward hierarchical clustering (Euclidean) on the **autoscaled retained PC
   scores**, the number of clusters chosen at the dendrogram's largest gap
   between merge heights (`choose_k`; the silhouette of each cut reported);
5. one representative (medoid) per cluster, and the loadings read in words
   generated from the numbers (`describe_components`).

`similarity(df)` does it all and returns a `Similarity` whose tables the
notebook `suite_similarity.ipynb` draws and saves; docs/notebooks.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import GrainlabError

VARIANCE = 0.85

# property -> (how it is computed from a characterize row, what it means).
# Logarithms where a property spans orders of magnitude. None of these is a
# count of grains, a total time or a thread-time share: those grow with the run
# or depend on the threads and the scheduler (the thesis avoids them too).
PROPERTIES = {
    "log_grain_work_median": "median grain work (log10 ns)",
    "log_grain_work_spread": "spread of grain work, log10(p90 / p10)",
    "grain_work_cv": "unevenness of grain work (coefficient of variation, log10(1 + cv))",
    "log_join_degree": "grains per join (log10 mean join degree)",
    "log_depth": "task nesting depth (log10 mean depth)",
    "critical_path_share": "share of the grains on the critical path",
    "span_share": "share of the work on the critical path (span / work)",
    "chunk_share": "share of the grains that are loop chunks",
}


def program_properties(df: pd.DataFrame) -> pd.DataFrame:
    """The PROPERTIES of each characterize row (index: trace name), plus
    `counter:*_median` columns (log10) where every trace recorded them."""
    grains = df["grains"].astype(float).where(df["grains"] > 0)
    out = pd.DataFrame({
        "log_grain_work_median": np.log10(df["grain_work_median_ns"].astype(float).clip(lower=1)),
        "log_grain_work_spread": np.log10(df["grain_work_p90_ns"].astype(float).clip(lower=1)
                                          / df["grain_work_p10_ns"].astype(float).clip(lower=1)),
        "grain_work_cv": np.log10(1 + df["grain_work_cv"].astype(float)),
        "log_join_degree": np.log10(df["join_degree_mean"].astype(float).clip(lower=1)),
        "log_depth": np.log10(df["depth_mean"].astype(float).clip(lower=1)),
        "critical_path_share": df["critical_path_grains"].astype(float) / grains,
        "span_share": df["span_ns"].astype(float) / df["work_ns"].astype(float).where(
            df["work_ns"] > 0),
        "chunk_share": df["chunks"].astype(float) / grains,
    })
    for col in df.columns:
        if col.startswith("counter:") and col.endswith("_median") and df[col].notna().all():
            out[col] = np.log10(df[col].astype(float).clip(lower=0) + 1)
    out.index = [Path(str(t)).stem for t in df["trace"]]
    return out


def autoscale(x) -> np.ndarray:
    """Zero mean, unit (sample, ddof=1) variance per column: R's scale(),
    which princomp and hclust were fed in the thesis."""
    x = np.asarray(x, np.float64)
    sd = x.std(axis=0, ddof=1)
    return (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def pca(z: np.ndarray):
    """(explained variance ratio, loadings p x c, scores n x c) of the
    centred matrix z by SVD; each loading vector's sign is fixed so that its
    largest-magnitude entry is positive (signs are otherwise arbitrary)."""
    u, s, vt = np.linalg.svd(z - z.mean(axis=0), full_matrices=False)
    big = np.argmax(np.abs(vt), axis=1)
    sign = np.sign(vt[np.arange(len(vt)), big])
    sign[sign == 0] = 1
    vt = vt * sign[:, None]
    var = s ** 2
    ratio = var / var.sum() if var.sum() > 0 else var
    return ratio, vt.T, (z - z.mean(axis=0)) @ vt.T


def retained(ratio, variance: float = VARIANCE) -> int:
    """The fewest leading components whose cumulative share reaches
    `variance` (at least 1)."""
    cum = np.cumsum(ratio)
    return int(min(np.searchsorted(cum, variance - 1e-12) + 1, len(ratio)))


def loo_press(z: np.ndarray, max_components: int) -> np.ndarray:
    """Leave-one-out cross-validation of the number of components: PRESS[k]
    for k = 0..max_components, the mean squared error of predicting each
    element of a left-out row from the row's other elements and the k
    loadings of the other rows (element-wise, "ekf" cross-validation, Bro et
    al. 2008, so that more components do not fit the left-out row trivially).
    The number of components with the least PRESS is the one the data
    supports."""
    n, p = z.shape
    press = np.zeros(max_components + 1)
    for i in range(n):
        train = np.delete(z, i, axis=0)
        mu = train.mean(axis=0)
        _, _, vt = np.linalg.svd(train - mu, full_matrices=False)
        x = z[i] - mu
        press[0] += float(x @ x)
        for k in range(1, max_components + 1):
            press[k] += _left_out_error(x, vt[:k].T)
    return press / (n * p)


def _left_out_error(x: np.ndarray, P: np.ndarray) -> float:
    """Squared error of predicting each x[j] from the other elements through
    the loadings P (p x k): scores from the rows of P without j, by least
    squares; all j at once."""
    p = len(x)
    err = 0.0
    for j in range(p):
        keep = np.arange(p) != j
        t, *_ = np.linalg.lstsq(P[keep], x[keep], rcond=None)
        err += float((x[j] - P[j] @ t) ** 2)
    return err


def choose_k(y: np.ndarray, links: np.ndarray, k_max: int = 12) -> tuple[int, pd.DataFrame]:
    """The number of clusters at the dendrogram's largest gap: k such that
    the jump from the (k-1)-th highest merge to the k-th highest is the
    largest (the cut through the longest vertical branches), among
    k = 2..k_max; ties go to the fewer clusters. Returns (k, table per k of
    that gap and, as a check, the mean silhouette of the cut on y)."""
    from scipy.cluster.hierarchy import fcluster
    from sklearn.metrics import silhouette_score
    n = len(y)
    h = np.sort(links[:, 2])[::-1]          # highest merge first
    rows = {}
    for k in range(2, min(k_max, n - 1) + 1):
        labels = fcluster(links, t=k, criterion="maxclust")
        sil = float(silhouette_score(y, labels)) if len(set(labels)) == k else float("nan")
        rows[k] = {"gap": float(h[k - 2] - h[k - 1]), "silhouette": sil}
    if not rows:
        return 1, pd.DataFrame(columns=["gap", "silhouette"])
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "k"
    return int(table["gap"].idxmax()), table


def cut_height(links: np.ndarray, k: int) -> float:
    """A height that cuts the dendrogram into exactly k clusters: midway
    between the (n-k)-th and the next merge."""
    h = links[:, 2]
    n = len(h) + 1
    if k <= 1:
        return float(h[-1] * 1.05 + 1e-12)
    lo, hi = h[n - k - 1], h[n - k]
    return float((lo + hi) / 2)


def numbered_clusters(links: np.ndarray, k: int) -> np.ndarray:
    """scipy's maxclust labels for k clusters, renumbered 1..k in the
    left-to-right order the clusters appear in the dendrogram."""
    from scipy.cluster.hierarchy import fcluster, leaves_list
    raw = fcluster(links, t=k, criterion="maxclust")
    order = leaves_list(links)
    first_seen = pd.unique(raw[order])
    renumber = {int(c): i + 1 for i, c in enumerate(first_seen)}
    return np.array([renumber[int(c)] for c in raw])


def medoids(y: np.ndarray, labels: np.ndarray, names) -> dict:
    """Per cluster, the member with the least summed Euclidean distance to
    the other members (in y)."""
    names = np.asarray(names)
    out = {}
    for c in sorted(set(labels.tolist())):
        idx = np.flatnonzero(labels == c)
        pts = y[idx]
        d = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1)).sum(1)
        out[int(c)] = str(names[idx[np.argmin(d)]])
    return out


@dataclass
class Similarity:
    properties: pd.DataFrame          # traces x properties (before scaling)
    ratio: np.ndarray                 # explained variance ratio of every PC
    keep: int                         # PCs retained (>= VARIANCE)
    press: np.ndarray                 # LOO PRESS for 0..max components
    loadings: pd.DataFrame            # properties x retained PCs
    scores: pd.DataFrame              # traces x retained PCs (PC scores)
    scaled_scores: np.ndarray         # the autoscaled retained scores (clustered)
    links: np.ndarray                 # Ward linkage of scaled_scores
    k: int                            # clusters chosen
    cut_table: pd.DataFrame           # per k: merge-height gap, silhouette
    clusters: pd.Series               # trace -> cluster 1..k (dendrogram order)
    representatives: dict = field(default_factory=dict)   # cluster -> medoid

    @property
    def cv_best(self) -> int:
        return int(np.argmin(self.press))

    @property
    def height(self) -> float:
        return cut_height(self.links, self.k)

    def members(self) -> dict:
        return {int(c): sorted(self.clusters.index[self.clusters == c])
                for c in sorted(self.clusters.unique())}


def similarity(df: pd.DataFrame, variance: float = VARIANCE, k_max: int = 12) -> Similarity:
    """The whole §4.5.2 analysis of a characterize table (>= 4 traces)."""
    from scipy.cluster.hierarchy import linkage
    props = program_properties(df).replace([np.inf, -np.inf], np.nan)
    bad = props.columns[props.isna().any()].tolist()
    if bad:
        rows = props.index[props.isna().any(axis=1)].tolist()
        raise GrainlabError(f"properties {', '.join(bad)} undefined for {', '.join(rows)} "
                            "(no grains or no work?)")
    props = props.loc[:, props.std(ddof=1) > 0]
    if len(props) < 4 or props.shape[1] < 2:
        raise GrainlabError(f"{len(props)} traces and {props.shape[1]} varying properties: "
                            "need >= 4 traces and >= 2 properties")
    z = autoscale(props)
    ratio, vectors, scores = pca(z)
    keep = max(2, retained(ratio, variance))
    press = loo_press(z, max(1, min(props.shape[1] - 2, len(props) - 2)))
    cols = [f"PC{i + 1}" for i in range(keep)]
    y = autoscale(scores[:, :keep])
    links = linkage(y, method="ward", metric="euclidean")
    k, table = choose_k(y, links, k_max)
    labels = numbered_clusters(links, k)
    names = props.index.to_numpy()
    return Similarity(
        properties=props, ratio=ratio, keep=keep, press=press,
        loadings=pd.DataFrame(vectors[:, :keep], index=props.columns, columns=cols),
        scores=pd.DataFrame(scores[:, :keep], index=props.index, columns=cols),
        scaled_scores=y, links=links, k=k, cut_table=table,
        clusters=pd.Series(labels, index=props.index, name="cluster"),
        representatives=medoids(y, labels, names))

"""grainlab.suite.similarity and findings (the thesis's §4.5.2 method, issue
25) against independent computations: sklearn's PCA and StandardScaler,
scipy's linkage/fcluster, sklearn's own Ward clustering, brute-force medoids
and cross-validation, and the numbers each generated sentence states."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import cdist
from sklearn.cluster import AgglomerativeClustering
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from grainlab.errors import GrainlabError
from grainlab.suite import findings as F
from grainlab.suite import similarity as S


def characterize_rows(seed=0, programs=6, sizes=("small", "medium", "large")) -> pd.DataFrame:
    """A characterize-like table: programs of distinct shapes at three sizes."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(programs):
        med = 10 ** rng.uniform(2, 6)
        for i, size in enumerate(sizes):
            grains = int(100 * 4 ** i * (p + 1))
            work = grains * med * (1 + rng.uniform(0, 0.3))
            rows.append({
                "trace": f"/x/prog{p}-{size}.parquet", "program": f"prog{p} {i}",
                "grains": grains, "tasks": grains if p % 2 else 0, "chunks": 0 if p % 2 else grains,
                "grain_work_median_ns": med * (1 + 0.2 * i + rng.uniform(0, 0.1)),
                "grain_work_p10_ns": med / (2 + p), "grain_work_p90_ns": med * (2 + p + i),
                "grain_work_cv": 0.3 * (p + 1) + rng.uniform(0, 0.2),
                "join_degree_mean": 2 + 5 * (p % 3) + rng.uniform(0, 1),
                "depth_mean": 1 + 3 * (p % 2) * (i + 1) + rng.uniform(0, 0.5),
                "critical_path_grains": max(1, int(grains * (0.02 + 0.1 * (p % 3)))),
                "span_ns": work * (0.1 + 0.15 * (p % 4)) * rng.uniform(0.9, 1.1),
                "work_ns": work})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def df():
    return characterize_rows()


@pytest.fixture(scope="module")
def sim(df):
    return S.similarity(df)


def test_autoscale_is_zscore_with_sample_variance():
    x = np.random.default_rng(1).normal(size=(9, 4)) * [1, 10, 100, 0.1]
    ref = StandardScaler().fit_transform(x) * np.sqrt(8 / 9)     # ddof=0 -> ddof=1
    assert np.allclose(S.autoscale(x), ref)


def test_pca_matches_sklearn(sim):
    z = S.autoscale(sim.properties)
    ref = PCA().fit(z)
    assert np.allclose(sim.ratio, ref.explained_variance_ratio_)
    k = sim.keep
    ref_scores = ref.transform(z)[:, :k]
    # same components up to sign
    signs = np.sign((sim.scores.to_numpy() * ref_scores).sum(0))
    assert np.allclose(sim.scores.to_numpy(), ref_scores * signs)
    assert np.allclose(sim.loadings.to_numpy(), ref.components_[:k].T * signs)


def test_retained_components_reach_85_percent_and_no_fewer_do(sim):
    cum = np.cumsum(sim.ratio)
    assert cum[sim.keep - 1] >= 0.85
    assert sim.keep == max(2, int(np.argmax(cum >= 0.85)) + 1)


def test_retained_counts_components_one_by_one():
    ratio = np.array([0.5, 0.3, 0.06, 0.05, 0.09])
    assert S.retained(ratio, 0.85) == 3      # 0.86
    assert S.retained(ratio, 0.87) == 4      # 0.91
    assert S.retained(ratio, 0.80) == 2
    assert S.retained(np.array([0.9, 0.1]), 0.85) == 1


def _press_brute(z, k):
    """Element-wise leave-one-out PRESS with sklearn's PCA and the normal
    equations (an independent route to the same definition)."""
    n, p = z.shape
    total = 0.0
    for i in range(n):
        train = np.delete(z, i, axis=0)
        x = z[i] - train.mean(0)
        if k == 0:
            total += float(x @ x)
            continue
        P = PCA(n_components=k).fit(train).components_.T
        for j in range(p):
            m = np.arange(p) != j
            t = np.linalg.solve(P[m].T @ P[m], P[m].T @ x[m])
            total += float((x[j] - P[j] @ t) ** 2)
    return total / (n * p)


def test_loo_press_matches_brute_force(sim):
    z = S.autoscale(sim.properties)
    for k in range(len(sim.press)):
        assert sim.press[k] == pytest.approx(_press_brute(z, k), rel=1e-6)


def test_loo_press_finds_the_rank_of_low_rank_data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(30, 2)) @ rng.normal(size=(2, 7)) + 0.01 * rng.normal(size=(30, 7))
    press = S.loo_press(S.autoscale(x), 5)
    assert int(np.argmin(press)) == 2


def test_clusters_are_ward_on_autoscaled_retained_scores(sim):
    # scipy directly, from sklearn's scores
    z = S.autoscale(sim.properties)
    scores = PCA(n_components=sim.keep).fit_transform(z)
    y = StandardScaler().fit_transform(scores)
    ref = fcluster(linkage(y, "ward"), t=sim.k, criterion="maxclust")
    assert _same_partition(sim.clusters.to_numpy(), ref)
    # and sklearn's own Ward implementation
    sk = AgglomerativeClustering(n_clusters=sim.k, linkage="ward").fit_predict(y)
    assert _same_partition(sim.clusters.to_numpy(), sk)
    # the height drawn as the cut gives the same clusters
    by_height = fcluster(sim.links, t=sim.height, criterion="distance")
    assert _same_partition(sim.clusters.to_numpy(), by_height)


def _same_partition(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return len(set(zip(a, b))) == len(set(a)) == len(set(b))


def test_k_is_at_the_largest_gap_between_merge_heights(sim):
    h = np.sort(sim.links[:, 2])[::-1]
    gaps = {k: h[k - 2] - h[k - 1] for k in range(2, min(12, len(h)) + 1)}
    assert sim.k == max(gaps, key=gaps.get)
    assert sim.clusters.nunique() == sim.k


def test_choose_k_finds_separated_groups():
    rng = np.random.default_rng(5)
    centres = np.array([[0, 0], [10, 0], [0, 10]])
    y = np.vstack([c + rng.normal(scale=0.3, size=(6, 2)) for c in centres])
    k, table = S.choose_k(y, linkage(y, "ward"))
    assert k == 3
    assert table["silhouette"].idxmax() == 3


def test_clusters_are_numbered_in_dendrogram_order(sim):
    from scipy.cluster.hierarchy import leaves_list
    order = sim.clusters.to_numpy()[leaves_list(sim.links)]
    first = pd.unique(order)
    assert list(first) == list(range(1, sim.k + 1))


def test_medoids_by_brute_force(sim):
    y = sim.scaled_scores
    for c, name in sim.representatives.items():
        idx = np.flatnonzero(sim.clusters.to_numpy() == c)
        d = cdist(y[idx], y[idx]).sum(1)
        assert sim.clusters.index[idx[np.argmin(d)]] == name


def test_properties_are_size_free_ratios(df):
    props = S.program_properties(df)
    r = df.iloc[0]
    assert props.iloc[0]["critical_path_share"] == pytest.approx(
        r["critical_path_grains"] / r["grains"])
    assert props.iloc[0]["span_share"] == pytest.approx(r["span_ns"] / r["work_ns"])
    assert props.iloc[0]["log_grain_work_median"] == pytest.approx(
        np.log10(r["grain_work_median_ns"]))
    for run_length in ("grains", "work_ns", "span_ns", "threads", "overhead_fraction"):
        assert run_length not in props.columns
    assert list(props.index[:2]) == ["prog0-small", "prog0-medium"]


def test_too_few_traces_is_one_line_error(df):
    with pytest.raises(GrainlabError, match="need >= 4 traces"):
        S.similarity(df.head(3))


def test_undefined_property_names_the_trace(df):
    bad = df.copy()
    bad.loc[2, "work_ns"] = 0
    with pytest.raises(GrainlabError, match="prog0-large"):
        S.similarity(bad)


# -- the generated sentences state the numbers ---------------------------------------------


def test_variance_sentence_states_the_retained_count_and_share(sim):
    text = F.describe_variance(sim)
    m = re.search(r"first \*\*(\d+)\*\* principal components explain \*\*([\d.]+)%", text)
    assert int(m.group(1)) == sim.keep
    assert float(m.group(2)) == pytest.approx(100 * sim.ratio[:sim.keep].sum(), abs=0.05)
    assert f"least with {sim.cv_best} component" in text


def test_component_sentences_name_the_strong_loadings(sim):
    text = F.describe_components(sim)
    for pc in sim.loadings.columns:
        line = next(ln for ln in text.splitlines() if ln.startswith(f"- **{pc}**"))
        for prop, v in sim.loadings[pc].items():
            named = f"({v:+.2f})" in line and F._meaning(prop) in line
            assert named == (abs(v) >= F.STRONG or prop == sim.loadings[pc].abs().idxmax())
        top = sim.scores[pc].idxmax()
        assert f"Highest: {top}" in line


def test_cluster_sentences_match_the_clusters(sim):
    text = F.describe_clusters(sim)
    assert text.startswith(f"**{sim.k} clusters**")
    assert f"Ward height {sim.height:.2f}" in text
    for c, members in sim.members().items():
        line = next(ln for ln in text.splitlines() if ln.startswith(f"- **cluster {c}**"))
        assert line.endswith("members " + ", ".join(members))
        assert f"representative **{sim.representatives[c]}**" in line


def test_size_moves_are_path_lengths(sim):
    m = F.size_moves(sim).set_index("program")
    y = pd.DataFrame(sim.scaled_scores, index=sim.scores.index)
    pts = y.loc[["prog1-small", "prog1-medium", "prog1-large"]].to_numpy()
    assert m.loc["prog1", "path"] == pytest.approx(
        np.linalg.norm(pts[1] - pts[0]) + np.linalg.norm(pts[2] - pts[1]))
    assert F.program_and_size("uts-geo-small") == ("uts-geo", "small")
    assert F.program_and_size("mine") == ("mine", None)


def test_dendrogram_colours_are_the_printed_clusters(sim):
    import matplotlib
    matplotlib.use("Agg")
    from grainlab.suite import plots as P
    fig, drawn = P.dendrogram(sim)
    colours = P.cluster_colours(sim.k)
    assert drawn == {n: colours[c] for n, c in sim.clusters.items()}
    links = P.link_colours(sim)
    n = len(sim.clusters)
    # a link drawn in a cluster's colour joins members of that cluster only
    assert sum(1 for i in range(n, 2 * n - 1) if links[i] == P.GREY) == sim.k - 1
    ax = fig.axes[0]
    # drawn sideways: the cut is a vertical line at its Ward height
    assert any(abs(line.get_xdata()[0] - sim.height) < 1e-9 for line in ax.get_lines())


def _boxes(fig, texts):
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in texts if t.get_text()]


def _overlaps(boxes) -> list:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].overlaps(boxes[j])]


def test_figures_have_a_legend_per_cluster_and_no_overlapping_labels(sim):
    """The planes and the dendrogram (issue 32): a legend entry per cluster
    colour, naming its representative; the program labels of a plane do not
    overlap one another; the dendrogram's leaves are names of at least 8 pt
    that do not overlap."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.text import Annotation
    from grainlab.suite import plots as P
    colours = P.cluster_colours(sim.k)
    for fig in (P.plane(sim, 1, 2), P.dendrogram(sim)[0]):
        ax = fig.axes[0]
        fig.canvas.draw()
        legend = ax.get_legend()
        entries = [t.get_text() for t in legend.get_texts()]
        assert entries == [f"cluster {c}: {sim.representatives[c]} "
                           f"({int((sim.clusters == c).sum())})" for c in range(1, sim.k + 1)]
        assert [h.get_color() for h in legend.legend_handles] == list(colours.values())
    plane = P.plane(sim, 1, 2)
    plane.canvas.draw()
    labels = [t for t in plane.axes[0].texts if isinstance(t, Annotation)]
    programs = {n.rpartition("-")[0] for n in sim.clusters.index}
    assert sorted(t.get_text() for t in labels) == sorted(programs)
    assert not _overlaps(_boxes(plane, labels))
    fig, _ = P.dendrogram(sim)
    fig.canvas.draw()
    leaves = fig.axes[0].get_yticklabels()
    assert len(leaves) == len(sim.clusters)
    assert min(t.get_fontsize() for t in leaves) >= 8
    assert not _overlaps(_boxes(fig, leaves))


def test_place_labels_moves_a_label_off_another():
    """Two points closer than a label's width: the second label goes elsewhere."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from grainlab.suite import plots as P
    fig, ax = plt.subplots(figsize=(4, 3))
    xy = np.array([[0.5, 0.5], [0.52, 0.5], [0.5, 0.52], [0.3, 0.3]])
    ax.scatter(xy[:, 0], xy[:, 1])
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    boxes = P.place_labels(ax, xy, ["a long label", "another label", "a third one", "far"])
    assert len(boxes) == 4 and not _overlaps(boxes)

"""The grain graph as a static SVG (and PNG through headless Chromium), drawn
from the same layout as the web app (grainlab.export.drawing).

Every element carries its kind as a class: rectangles `fragment` (with
`data-grain=ID`), `chunk` (with its iteration range as a label), `summary`
(a collapsed subtree), shapes `fork` (green triangle), `join` (orange
circle), `bookkeeping` (turquoise square); edges `edge creation`,
`edge synchronization`, `edge continuation` (`edge dependence`); `critical`
on whatever lies on the critical path (red border or line).
"""
from __future__ import annotations

import html
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..errors import GrainlabError
from .drawing import Drawing, item_fill
from .palette import CRITICAL, EDGE_COLORS, KIND_COLORS

COL = 26            # px per column
BAR = 14            # px: width of a rectangle
SHAPE = 6           # px: half size of a fork / join / book-keeping shape
TOP, LEFT = 76, 70  # px: room for the legend and the time axis
MIN_LEN = 2.0       # px: the shortest rectangle drawn


def _scale(d: Drawing, height: int):
    lo, hi = d.window
    k = height / max(hi - lo, 1.0)
    return lo, hi, k


def render_svg(d: Drawing, height: int = 1000, title: str = "") -> str:
    """The drawing as an SVG document (a string)."""
    it = d.items
    lo, hi, k = _scale(d, height)
    width = max(LEFT + COL * max(d.n_columns, 1) + 160, 760)
    cx = LEFT + COL * it["x"].to_numpy(np.float64) + COL / 2
    # what lies outside the window (serial code before and after the
    # parallel part) is cut at its edges, a few px beyond
    y0 = TOP + (it["y0"].to_numpy(np.float64).clip(lo, hi) - lo) * k
    y1 = TOP + (it["y1"].to_numpy(np.float64).clip(lo, hi) - lo) * k
    cut_top = it["y0"].to_numpy(np.float64) < lo
    y0[cut_top] -= 12
    y1 = np.where(it["y1"].to_numpy(np.float64) > hi, y1 + 12, y1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
             f'height="{height + TOP + 40}" font-family="sans-serif" font-size="10">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="8" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>']
    parts += _legend(d)
    parts += _axis(d, lo, hi, k)
    parts += _edges(d, cx, y0, y1)
    parts += _items(d, cx, y0, y1)
    parts.append("</svg>")
    return "\n".join(parts)


def _legend(d: Drawing) -> list:
    what = "DAG time: each node starts where its predecessors end" if d.mode == "dag" \
        else "wall-clock time"
    out = [f'<text x="8" y="32" fill="#555">time flows down ({what}); '
           'rectangles: grain fragments, length = execution time</text>']
    x = 8
    for name, color in [("fork", KIND_COLORS["fork"]), ("join", KIND_COLORS["join"]),
                        ("book-keeping", KIND_COLORS["bookkeeping"]),
                        ("chunk", KIND_COLORS["chunk"]), ("creation", EDGE_COLORS["creation"]),
                        ("synchronization", EDGE_COLORS["synchronization"]),
                        ("continuation", EDGE_COLORS["continuation"]), ("critical path", CRITICAL)]:
        out.append(f'<rect x="{x}" y="39" width="10" height="10" fill="{color}"/>'
                   f'<text x="{x + 13}" y="48">{name}</text>')
        x += 18 + 6 * len(name)
    return out


def _axis(d: Drawing, lo, hi, k) -> list:
    span = max(hi - lo, 1.0)
    step = 10 ** np.floor(np.log10(span / 5))
    if span / step > 10:
        step *= 2
    ticks = np.arange(np.ceil(lo / step) * step, hi + 1, step)
    out = [f'<text x="4" y="{TOP - 4}" fill="#555">ms</text>']
    for t in ticks:
        y = TOP + (t - lo) * k
        out.append(f'<line x1="{LEFT - 6}" x2="{LEFT - 2}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="#999"/><text x="4" y="{y + 3:.1f}" fill="#555">{t / 1e6:.4g}</text>')
    return out


def _edges(d: Drawing, cx, y0, y1) -> list:
    e = d.edges
    if not len(e):
        return []
    s, t = e["src"].to_numpy(np.int64), e["dst"].to_numpy(np.int64)
    typ = e["type"].to_numpy().astype(str)
    crit = e["critical"].to_numpy(bool)
    cls = np.char.add("edge ", typ)
    cls = np.where(crit, np.char.add(cls, " critical"), cls)
    color = np.array([EDGE_COLORS.get(x, "#999") for x in typ], dtype=object)
    color[crit] = CRITICAL
    width = np.where(crit, 2.0, 1.0)
    ya, yb = y1[s], y0[t]
    return [f'<line class="{c}" x1="{a:.1f}" y1="{b:.1f}" x2="{p:.1f}" y2="{q:.1f}" '
            f'stroke="{col}" stroke-width="{w}" opacity="0.8"/>'
            for c, a, b, p, q, col, w in zip(cls, cx[s], ya, cx[t], yb, color, width)]


def _items(d: Drawing, cx, y0, y1) -> list:
    it = d.items
    kind = it["kind"].to_numpy().astype(str)
    crit = it["critical"].to_numpy(bool)
    fill = item_fill(it, d.n_grains)
    out = []
    rect = np.isin(kind, ["fragment", "chunk", "summary"])
    # rectangles first (the shapes sit on top of the chains)
    for i in np.flatnonzero(rect):
        out.append(_rect(it, i, kind[i], crit[i], fill[i], cx[i], y0[i], y1[i]))
    # a fork, join or book-keeping node that took time: a thin bar behind it
    k = (y1 - y0 > 4) & ~rect
    for i in np.flatnonzero(k):
        out.append(f'<rect class="extent" x="{cx[i] - 2:.1f}" y="{y0[i]:.1f}" width="4" '
                   f'height="{y1[i] - y0[i]:.1f}" fill="{KIND_COLORS[kind[i]]}"/>')
    for i in np.flatnonzero(~rect):
        out.append(_shape(kind[i], crit[i], cx[i], (y0[i] + y1[i]) / 2, int(it["grain"].iat[i])))
    return out


def _rect(it, i, kind, crit, fill, cx, y0, y1) -> str:
    h = max(y1 - y0, MIN_LEN)
    cls = kind + (" critical" if crit else "")
    stroke = CRITICAL if crit else (KIND_COLORS["chunk"] if kind == "chunk" else "#777")
    sw = 2 if crit or kind == "chunk" else 0.5
    gid = int(it["grain"].iat[i])
    attrs = f' data-grain="{gid}"' if kind in ("fragment", "chunk") else \
        (f' data-token="{html.escape(str(it["token"].iat[i]))}"'
         f' data-grains="{int(it["n_grains"].iat[i])}"')
    dash = ' stroke-dasharray="3,2"' if kind == "summary" else ""
    w = BAR + (6 if kind == "summary" else 0)
    out = (f'<rect class="{cls}"{attrs} x="{cx - w / 2:.1f}" y="{y0:.1f}" width="{w}" '
           f'height="{h:.1f}" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{dash}>'
           f'<title>{html.escape(_tooltip(it, i))}</title></rect>')
    label = str(it["label"].iat[i] or "")
    if label:
        out += (f'<text class="label" x="{cx + w / 2 + 2:.1f}" y="{y0 + min(h, 12) - 2:.1f}" '
                f'font-size="9">{html.escape(label)}</text>')
    return out


def _shape(kind, crit, cx, y, gid) -> str:
    stroke = CRITICAL if crit else "white"
    sw = 2 if crit else 0.5
    cls = kind + (" critical" if crit else "")
    color = KIND_COLORS[kind]
    s = SHAPE
    if kind == "fork":
        return (f'<polygon class="{cls}" data-owner="{gid}" points="{cx - s:.1f},{y - s:.1f} '
                f'{cx + s:.1f},{y - s:.1f} {cx:.1f},{y + s:.1f}" fill="{color}" '
                f'stroke="{stroke}" stroke-width="{sw}"/>')
    if kind == "join":
        return (f'<circle class="{cls}" data-owner="{gid}" cx="{cx:.1f}" cy="{y:.1f}" r="{s}" '
                f'fill="{color}" stroke="{stroke}" stroke-width="{sw}"/>')
    return (f'<rect class="{cls}" data-owner="{gid}" x="{cx - s + 1:.1f}" y="{y - s + 1:.1f}" '
            f'width="{2 * s - 2}" height="{2 * s - 2}" fill="{color}" stroke="{stroke}" '
            f'stroke-width="{sw}"/>')


def _tooltip(it, i) -> str:
    kind = it["kind"].iat[i]
    if kind == "summary":
        return (f"collapsed subtree: {int(it['n_grains'].iat[i])} grains, work "
                f"{it['work'].iat[i] / 1e3:.1f} us, span {it['span'].iat[i] / 1e3:.1f} us")
    return (f"{kind} of #{int(it['grain'].iat[i])}: {it['weight'].iat[i] / 1e3:.2f} us"
            + (f" ({int(it['n_members'].iat[i])} nodes)" if it["n_members"].iat[i] > 1 else ""))


def write_svg(d: Drawing, path, title: str = "", height: int = 1000) -> dict:
    text = render_svg(d, height=height, title=title)
    Path(path).write_text(text)
    return {"bytes": len(text.encode()), "items": len(d.items), "edges": len(d.edges)}


def write_png(d: Drawing, path, title: str = "", height: int = 1000) -> dict:
    """The SVG rasterized by headless Chromium (no other dependency)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or \
        shutil.which("google-chrome")
    if exe is None:
        raise GrainlabError("--png needs Chromium (apt install chromium); "
                            "--svg works without it")
    text = render_svg(d, height=height, title=title)
    import re
    w, h = (int(float(v)) for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', text).groups())
    with tempfile.TemporaryDirectory(prefix="grainlab-png-") as tmp:
        svg = Path(tmp) / "graph.svg"
        svg.write_text(text)
        out = Path(tmp) / "graph.png"
        r = subprocess.run([exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", f"--user-data-dir={tmp}/profile",
                            f"--window-size={min(w, 16000)},{min(h, 16000)}",
                            f"--screenshot={out}", svg.as_uri()],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0 or not out.exists():
            raise GrainlabError(f"Chromium could not render the PNG: "
                                f"{(r.stderr.strip().splitlines() or ['?'])[-1]}")
        data = out.read_bytes()
    Path(path).write_bytes(data)
    return {"bytes": len(data), "items": len(d.items), "edges": len(d.edges)}

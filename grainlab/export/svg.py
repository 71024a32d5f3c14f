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
from .drawing import Drawing, from_start, item_fill, time_ticks
from .palette import (CHUNK_FILL, CONTEXT_COLOR, CRITICAL, DIMMED, EDGE_COLORS, KIND_COLORS,
                      SEVERITY_COLORS, SUMMARY_BORDER)

COL = 26            # px per column (at most: narrower to fit a width)
BAR = 14            # px: width of a rectangle (at most)
SHAPE = 6           # px: half size of a fork / join / book-keeping shape (at most)
LEFT = 70           # px: room for the time axis
MIN_LEN = 2.0       # px: the shortest rectangle drawn
DEFAULT_WIDTH = 2400    # px: the widest a drawing is without --fit (columns narrow to fit)
CHAR = 5.6          # px: a character of the 9-10 px labels, for overlap checks
LINE = 16           # px: a legend line


class Geometry:
    """Sizes of one drawing: column pitch, bar and shape size, where the plot
    starts, and the time scale."""

    def __init__(self, d: Drawing, height: int, width: int | None, fit: bool):
        n = max(d.n_columns, 1)
        room = (width if width else DEFAULT_WIDTH) - LEFT - 20
        # --fit: a few columns (a depend graph's lanes) spread over the page,
        # up to 3 x COL apart, rather than a strip at its left edge
        self.col = float(min(COL * (3 if fit else 1), max(room / n, 1.0 if fit else 4.0)))
        self.bar = float(max(1.0, min(BAR, self.col * 0.6)))
        self.shape = float(max(2.0, min(SHAPE, self.col * 0.35)))
        self.width = float(width if width else max(LEFT + self.col * n + 20, 760))
        self.legend = _legend_entries(d)
        self.top = 40 + LINE * _legend_lines(self.legend, self.width) + 26
        # --fit: the whole picture is `height` px; else the drawing is
        self.plot = float(max(height - self.top - 40, 100) if fit else height)
        self.height = self.top + self.plot + 40


def render_svg(d: Drawing, height: int = 1000, title: str = "", width: int | None = None,
               fit: bool = False) -> str:
    """The drawing as an SVG document (a string). `fit`: the whole picture
    is `width` x `height` px (columns narrowed, labels that no longer fit
    dropped); else the drawing is `height` px tall and at most DEFAULT_WIDTH
    (or `width`) wide."""
    it = d.items
    geo = Geometry(d, height, width, fit)
    lo, hi = d.window
    k = geo.plot / max(float(from_start(d, hi)), 1.0)
    cx = LEFT + geo.col * it["x"].to_numpy(np.float64) + geo.col / 2
    # what lies outside the window (serial code before and after the
    # parallel part) is cut at its edges, a few px beyond; time through the
    # axis's breaks (drawing.time_map)
    top = geo.top

    def to_px(v):
        return top + from_start(d, np.clip(v, lo, hi)) * k
    y0 = to_px(it["y0"].to_numpy(np.float64))
    y1 = to_px(it["y1"].to_numpy(np.float64))
    # (rectangles only: a shape's edges must meet it where it is drawn)
    rect = np.isin(it["kind"].to_numpy().astype(str), ["fragment", "chunk", "summary"])
    cut_top = (it["y0"].to_numpy(np.float64) < lo) & rect
    y0[cut_top] -= 12
    y1 = np.where((it["y1"].to_numpy(np.float64) > hi) & rect, y1 + 12, y1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{geo.width:.0f}" '
             f'height="{geo.height:.0f}" font-family="sans-serif" font-size="10">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="8" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>']
    parts += _legend(d, geo)
    placed = _Labels()                      # no text drawn over another
    on_top: list = []                       # the breaks' labels, over everything
    parts += _axis(d, k, top, geo.width, placed, on_top)
    parts += _edges(d, cx, y0, y1, to_px)
    items, labels = _items(d, cx, y0, y1, geo, placed)
    parts += items
    parts += labels
    parts += on_top
    parts.append("</svg>")
    return "\n".join(parts)


def _legend_entries(d: Drawing) -> list:
    """(kind of swatch, colour, text) of every mark the drawing holds."""
    it = d.items
    kinds = set(it["kind"].astype(str))
    gid = it["grain"].to_numpy(np.int64)
    kind = it["kind"].to_numpy().astype(str)
    out = []
    if "fork" in kinds:
        out.append(("fork", KIND_COLORS["fork"], "fork (task creation)"))
    if "join" in kinds:
        out.append(("join", KIND_COLORS["join"], "join (taskwait, barrier)"))
    if "bookkeeping" in kinds:
        out.append(("bookkeeping", KIND_COLORS["bookkeeping"], "book-keeping"))
    sev = it["sev"].to_numpy(np.float64) if "sev" in it else np.full(len(it), np.nan)
    has_sev = bool(np.isfinite(sev).any())
    grain = np.isin(kind, ["fragment", "chunk"]) & (gid >= 0) & (gid < d.n_grains)
    if grain.any():
        if has_sev:
            out.append(("rect", DIMMED, "grain without the problem (dimmed)"))
        elif (kind == "fragment")[grain].any():
            out.append(("rect", KIND_COLORS["fragment"], "task fragment"))
    if "chunk" in kinds:
        out.append(("chunk", CHUNK_FILL, "loop chunk (iterations)"))
    if ((kind == "fragment") & (gid >= d.n_grains)).any():
        out.append(("rect", CONTEXT_COLOR, "serial / team code"))
    if "summary" in kinds:
        out.append(("summary", KIND_COLORS["summary"], "collapsed subtree (N grains)"))
    if has_sev:
        names = ["problem: < 20% past threshold", "20-40%", "40-60%", "60-80%", "> 80% past"]
        out += [("rect", c, n) for c, n in zip(SEVERITY_COLORS, names)]
    types = set(d.edges["type"].astype(str)) if len(d.edges) else set()
    for t in ("creation", "synchronization", "continuation", "dependence"):
        if t in types:
            out.append(("edge", EDGE_COLORS[t], f"{t} edge"))
    if len(d.edges) and "bundled" in d.edges and d.edges["bundled"].to_numpy(bool).any():
        out.append(("bundle", "#666", "thicker edge: N edges bundled (N on hover)"))
    if it["critical"].to_numpy(bool).any():
        out.append(("critical", CRITICAL, "critical path"))
    return out


def _entry_width(text: str) -> float:
    return 18 + CHAR * len(text) + 12


def _legend_lines(entries, width) -> int:
    lines, x = 1, 8.0
    for _, _, text in entries:
        w = _entry_width(text)
        if x + w > width - 8 and x > 8:
            lines, x = lines + 1, 8.0
        x += w
    return lines


def _legend(d: Drawing, geo) -> list:
    what = "DAG time: each node starts where its predecessors end" if d.mode == "dag" \
        else "wall-clock time"
    out = [f'<text x="8" y="32" fill="#555">time flows down ({what}); '
           'rectangles: grain fragments, length = execution time</text>']
    x, y = 8.0, 40.0
    for shape, color, text in geo.legend:
        w = _entry_width(text)
        if x + w > geo.width - 8 and x > 8:
            x, y = 8.0, y + LINE
        out.append(f'<g class="legend">{_swatch(shape, color, x, y)}'
                   f'<text x="{x + 16:.1f}" y="{y + 9:.1f}">{html.escape(text)}</text></g>')
        x += w
    return out


def _swatch(shape, color, x, y) -> str:
    """A legend mark drawn as the drawing draws it, in a 12 px box at (x, y)."""
    c, m = x + 6, y + 5
    if shape == "fork":
        return f'<polygon points="{x},{y} {x + 12},{y} {c},{y + 11}" fill="{color}"/>'
    if shape == "join":
        return f'<circle cx="{c}" cy="{m}" r="5.5" fill="{color}"/>'
    if shape == "bookkeeping":
        return f'<rect x="{x + 1}" y="{y}" width="10" height="10" fill="{color}"/>'
    if shape in ("edge", "critical", "bundle"):
        w = 3 if shape in ("critical", "bundle") else 1.5
        return f'<line x1="{x}" y1="{m}" x2="{x + 12}" y2="{m}" stroke="{color}" stroke-width="{w}"/>'
    stroke, dash = "#777", ""
    if shape == "chunk":
        stroke = KIND_COLORS["chunk"]
    if shape == "summary":
        stroke, dash = SUMMARY_BORDER, ' stroke-dasharray="3,2"'
    return (f'<rect x="{x + 3}" y="{y - 1}" width="7" height="12" fill="{color}" '
            f'stroke="{stroke}" stroke-width="1"{dash}/>')


def _axis(d: Drawing, k, top, width, placed, on_top) -> list:
    """Ticks in ms from the drawing's first instant (the region's start, not
    the trace's clock); a break of the time axis as a grey band across the
    drawing, labelled with the time it cuts out."""
    ticks, at, breaks = time_ticks(d)
    out = [f'<text x="4" y="{top - 12}" fill="#555">ms from start</text>']
    for b0, b1, cut in breaks:
        ya, yb = top + b0 * k, top + b1 * k
        out.append(f'<g class="break" data-cut-ns="{cut:.0f}"><rect x="{LEFT - 8}" '
                   f'y="{ya:.1f}" width="{width - LEFT}" height="{max(yb - ya, 1):.1f}" '
                   f'fill="#f0f0f0" opacity="0.6"/><path d="M{LEFT - 10},{ya + 3:.1f} '
                   f'l4,-3 l4,6 l4,-3 M{LEFT - 10},{yb:.1f} l4,-3 l4,6 l4,-3" fill="none" '
                   f'stroke="#555"/><title>time axis cut: {cut / 1e6:.3g} ms with one '
                   f'element alone</title></g>')
    placed.place(4, top - 12, "ms from start")
    for t, y in zip(ticks, top + at * k):
        out.append(f'<line x1="{LEFT - 6}" x2="{LEFT - 2}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="#999"/>')
        if placed.place(4, y + 3, f"{t / 1e6:.4g}"):
            out.append(f'<text x="4" y="{y + 3:.1f}" fill="#555">{t / 1e6:.4g}</text>')
    for b0, b1, cut in breaks:               # the cut's length, in the band's middle
        text = f"({cut / 1e6:.3g} ms cut)"
        y = top + (b0 + b1) / 2 * k + 3
        if placed.place(LEFT + 4, y, text):
            on_top.append(f'<text class="break-label" x="{LEFT + 4}" y="{y:.1f}" '
                          f'fill="#333" font-style="italic" stroke="white" stroke-width="3" '
                          f'paint-order="stroke">{text}</text>')
    return out


def _edges(d: Drawing, cx, y0, y1, to_px) -> list:
    e = d.edges
    if not len(e):
        return []
    s, t = e["src"].to_numpy(np.int64), e["dst"].to_numpy(np.int64)
    typ = e["type"].to_numpy().astype(str)
    crit = e["critical"].to_numpy(bool)
    count = e["count"].to_numpy(np.int64)
    bundled = e["bundled"].to_numpy(bool) if "bundled" in e else np.zeros(len(e), bool)
    cls = np.char.add("edge ", typ)
    cls = np.where(crit, np.char.add(cls, " critical"), cls)
    cls = np.where(bundled, np.char.add(cls, " bundled"), cls)
    color = np.array([EDGE_COLORS.get(x, "#999") for x in typ], dtype=object)
    color[crit] = CRITICAL
    # a bundle of n edges a little thicker (log scale), the path thicker still
    width = np.where(crit, 2.0, np.where(bundled, 1.0 + np.log2(np.maximum(count, 1)) / 3, 1.0))
    ya, yb = edge_ends(d, y0, y1, to_px)
    # the critical edges last, on top
    order = np.argsort(crit, kind="stable")
    return [f'<line class="{cls[i]}" data-src="{s[i]}" data-dst="{t[i]}" '
            f'{f"data-count={chr(34)}{count[i]}{chr(34)} " if bundled[i] else ""}'
            f'x1="{cx[s][i]:.1f}" y1="{ya[i]:.1f}" x2="{cx[t][i]:.1f}" y2="{yb[i]:.1f}" '
            f'stroke="{color[i]}" stroke-width="{width[i]:.2g}" opacity="0.8"'
            # empty elements self-closed, as XML serializers (IPython's SVG
            # display among them) write them: the notebook shows these bytes
            + (f'><title>{count[i]} {typ[i]} edges</title></line>' if bundled[i] else '/>')
            for i in order]


def edge_ends(d: Drawing, y0, y1, to_px) -> tuple:
    """Where each edge leaves its source and meets its destination (px): at
    its end nodes' times, on the items as drawn (a shape without a bar at
    its centre), so an edge from a grouped item leaves where its member
    sits. `y0`, `y1`: the items' drawn extents; `to_px`: ns to px."""
    e, it = d.edges, d.items
    s, t = e["src"].to_numpy(np.int64), e["dst"].to_numpy(np.int64)
    kind = it["kind"].to_numpy().astype(str)
    rect = np.isin(kind, ["fragment", "chunk", "summary"])
    lo = y0
    hi = np.where(rect, np.maximum(y1, y0 + MIN_LEN), y1)
    mid = (y0 + y1) / 2
    point = ~rect & (y1 - y0 <= 4)           # a shape drawn without its extent bar
    lo, hi = np.where(point, mid, lo), np.where(point, mid, hi)
    ys = to_px(e["ys"].to_numpy(np.float64)) if "ys" in e else y1[s]
    yd = to_px(e["yd"].to_numpy(np.float64)) if "yd" in e else y0[t]
    return np.clip(ys, lo[s], hi[s]), np.clip(yd, lo[t], hi[t])


class _Labels:
    """Text labels placed only where they overlap no label already placed
    (a grid of 40 px cells holds the placed boxes)."""

    def __init__(self):
        self.cells: dict = {}

    def place(self, x, y, text) -> bool:
        box = (x, y - 9, x + CHAR * len(text), y + 2)
        keys = [(i, j) for i in range(int(box[0] // 40), int(box[2] // 40) + 1)
                for j in range(int(box[1] // 40), int(box[3] // 40) + 1)]
        for key in keys:
            for b in self.cells.get(key, ()):
                if box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3]:
                    return False
        for key in keys:
            self.cells.setdefault(key, []).append(box)
        return True


def _items(d: Drawing, cx, y0, y1, geo, placed) -> tuple[list, list]:
    it = d.items
    kind = it["kind"].to_numpy().astype(str)
    crit = it["critical"].to_numpy(bool)
    fill = item_fill(it, d.n_grains)
    out, labels = [], []
    rect = np.isin(kind, ["fragment", "chunk", "summary"])
    # rectangles first (the shapes sit on top of the chains)
    for i in np.flatnonzero(rect):
        r, label = _rect(it, i, kind[i], crit[i], fill[i], cx[i], y0[i], y1[i], geo)
        out.append(r)
        if label is not None and placed.place(*label):
            labels.append(f'<text class="label" x="{label[0]:.1f}" y="{label[1]:.1f}" '
                          f'font-size="9">{html.escape(label[2])}</text>')
    # a fork, join or book-keeping node that took time: a thin bar behind it
    k = (y1 - y0 > 4) & ~rect
    bw = min(4.0, geo.bar / 2)
    for i in np.flatnonzero(k):
        out.append(f'<rect class="extent{" critical" if crit[i] else ""}" data-item="{i}" '
                   f'x="{cx[i] - bw / 2:.1f}" y="{y0[i]:.1f}" '
                   f'width="{bw:.1f}" height="{y1[i] - y0[i]:.1f}" '
                   f'fill="{KIND_COLORS[kind[i]]}"/>')
    for i in np.flatnonzero(~rect):
        out.append(_shape(kind[i], crit[i], cx[i], (y0[i] + y1[i]) / 2,
                          int(it["grain"].iat[i]), geo.shape, i))
    return out, labels


def _rect(it, i, kind, crit, fill, cx, y0, y1, geo):
    h = max(y1 - y0, MIN_LEN)
    cls = kind + (" critical" if crit else "")
    stroke = CRITICAL if crit else (KIND_COLORS["chunk"] if kind == "chunk" else
                                    SUMMARY_BORDER if kind == "summary" else "#777")
    sw = 2 if crit or kind in ("chunk", "summary") else 0.5
    if geo.bar < 4:
        sw = min(sw, 1)
    gid = int(it["grain"].iat[i])
    attrs = f' data-grain="{gid}"' if kind in ("fragment", "chunk") else \
        (f' data-token="{html.escape(str(it["token"].iat[i]))}"'
         f' data-grains="{int(it["n_grains"].iat[i])}"')
    dash = ' stroke-dasharray="3,2"' if kind == "summary" else ""
    w = geo.bar + (min(6, geo.bar * 0.4) if kind == "summary" else 0)
    out = (f'<rect class="{cls}" data-item="{i}"{attrs} x="{cx - w / 2:.1f}" y="{y0:.1f}" '
           f'width="{w:.1f}" height="{h:.1f}" fill="{fill}" stroke="{stroke}" '
           f'stroke-width="{sw}"{dash}><title>{html.escape(_tooltip(it, i))}</title></rect>')
    label = str(it["label"].iat[i] or "")
    return out, ((cx + w / 2 + 2, y0 + min(h, 12) - 2, label) if label else None)


def _shape(kind, crit, cx, y, gid, s, i) -> str:
    stroke = CRITICAL if crit else "white"
    sw = 2 if crit else 0.5
    cls = kind + (" critical" if crit else "")
    color = KIND_COLORS[kind]
    if kind == "fork":
        return (f'<polygon class="{cls}" data-item="{i}" data-owner="{gid}" '
                f'points="{cx - s:.1f},{y - s:.1f} '
                f'{cx + s:.1f},{y - s:.1f} {cx:.1f},{y + s:.1f}" fill="{color}" '
                f'stroke="{stroke}" stroke-width="{sw}"/>')
    if kind == "join":
        return (f'<circle class="{cls}" data-item="{i}" data-owner="{gid}" cx="{cx:.1f}" '
                f'cy="{y:.1f}" r="{s:.1f}" fill="{color}" stroke="{stroke}" stroke-width="{sw}"/>')
    return (f'<rect class="{cls}" data-item="{i}" data-owner="{gid}" x="{cx - s + 1:.1f}" '
            f'y="{y - s + 1:.1f}" width="{2 * s - 2:.1f}" height="{2 * s - 2:.1f}" '
            f'fill="{color}" stroke="{stroke}" stroke-width="{sw}"/>')


def _tooltip(it, i) -> str:
    kind = it["kind"].iat[i]
    if kind == "summary":
        return (f"collapsed subtree: {int(it['n_grains'].iat[i])} grains, work "
                f"{it['work'].iat[i] / 1e3:.1f} us, span {it['span'].iat[i] / 1e3:.1f} us")
    return (f"{kind} of #{int(it['grain'].iat[i])}: {it['weight'].iat[i] / 1e3:.2f} us"
            + (f" ({int(it['n_members'].iat[i])} nodes)" if it["n_members"].iat[i] > 1 else ""))


def write_svg(d: Drawing, path, title: str = "", height: int = 1000,
              width: int | None = None, fit: bool = False) -> dict:
    text = render_svg(d, height=height, title=title, width=width, fit=fit)
    Path(path).write_text(text)
    return {"bytes": len(text.encode()), "items": len(d.items), "edges": len(d.edges)}


def write_png(d: Drawing, path, title: str = "", height: int = 1000,
              width: int | None = None, fit: bool = False) -> dict:
    """The SVG rasterized by headless Chromium (no other dependency)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or \
        shutil.which("google-chrome")
    if exe is None:
        raise GrainlabError("--png needs Chromium (apt install chromium); "
                            "--svg works without it")
    text = render_svg(d, height=height, title=title, width=width, fit=fit)
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

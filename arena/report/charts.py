"""Charts as SVG drawn when the page is written: Elo with intervals, rating history, think time, margins.

Why SVG at build time and not a charting library in the page: the page must work offline from file://, so a
library would have to be embedded whole (Chart.js is ~200 KB, Plotly ~3 MB) in every page and kept up to
date by us; the charts here are a few lines and bars whose numbers are all known when the page is written,
so drawing them in Python costs a few KB per chart, needs no script to appear (they print, and show with
scripts off), and tests can read their numbers in the DOM. What is lost is hovering for exact values, which
the tables beside them give instead. A whole SVG scales as one picture, text and all, which suits a chart
of lines on a projector but not names on a phone: the Elo chart is rows of HTML names and SVG tracks, and
the others' ticks are set larger on a narrow page (the report's style) to read at the page's size.

Colours are the Okabe-Ito palette, told apart by readers with any common colour-vision deficiency, and
lines also differ by dash pattern once the palette repeats, so no line is known by its colour alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

# Okabe & Ito (2008), "Color Universal Design", without its yellow (too faint on white).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000")
DASHES = ("", "7 3", "2 3", "9 3 2 3")
WIN, DRAW, LOSS = "#0072B2", "#8a8f98", "#D55E00"  # blue and vermillion: apart for every reader


@dataclass(frozen=True, slots=True)
class Style:
    """How one bot's line is drawn, the same on every chart and in the legend."""

    colour: str
    dash: str


def style(k: int) -> Style:
    return Style(PALETTE[k % len(PALETTE)], DASHES[(k // len(PALETTE)) % len(DASHES)])


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round numbers spanning lo..hi."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    step = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * step:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True, slots=True)
class Series:
    """One bot's rating over the tournament: mu and sigma at each x (games played)."""

    name: str
    style: Style
    mu: Sequence[float]
    sigma: Sequence[float]


W, H = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 12, 34


def rating_chart(xs: Sequence[int], series: Sequence[Series], label: str) -> Markup:
    """mu of each bot as a line with a band of ± sigma, against games played in schedule order."""
    if not series or len(xs) < 2:
        return Markup("")
    lo = min(m - s for one in series for m, s in zip(one.mu, one.sigma, strict=True))
    hi = max(m + s for one in series for m, s in zip(one.mu, one.sigma, strict=True))
    x0, x1 = xs[0], max(xs[-1], xs[0] + 1)

    def px(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT)

    def py(y: float) -> float:
        return TOP + (hi - y) / (hi - lo or 1.0) * (H - TOP - BOTTOM)

    parts = [_frame(label), *_axes(_ticks(lo, hi), py, _ticks(x0, x1), px, "games played")]
    for one in series:
        upper = " ".join(
            f"{px(x):.1f},{py(m + s):.1f}" for x, m, s in zip(xs, one.mu, one.sigma, strict=True)
        )
        lower = " ".join(
            f"{px(x):.1f},{py(m - s):.1f}"
            for x, m, s in reversed(list(zip(xs, one.mu, one.sigma, strict=True)))
        )
        parts.append(f'<polygon points="{upper} {lower}" fill="{one.style.colour}" fill-opacity="0.12"/>')
    for one in series:
        line = " ".join(f"{px(x):.1f},{py(m):.1f}" for x, m in zip(xs, one.mu, strict=True))
        dash = f' stroke-dasharray="{one.style.dash}"' if one.style.dash else ""
        parts.append(
            f'<polyline class="mu" data-bot="{escape(one.name)}" data-last="{one.mu[-1]:.2f}" '
            f'points="{line}" fill="none" stroke="{one.style.colour}" stroke-width="2"{dash}>'
            f"<title>{escape(one.name)}: mu {one.mu[-1]:.1f} ± {one.sigma[-1]:.1f}</title></polyline>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


@dataclass(frozen=True, slots=True)
class Interval:
    """One bot's Elo and the half-width of its 95% interval, as the leaderboard shows them: `text` as its
    table has it ('1620 ± 85', or '≤ 1180' where its games bound it on one side only, `side` 'below' or
    'above': the line then runs from that bound to the chart's edge)."""

    name: str
    style: Style
    elo: float
    pm: float
    text: str
    side: str = ""


ROW = 20  # px per bot on the Elo chart
AXIS = 34  # px under the Elo chart's rows: tick labels and the axis' name


def _span(lo: float, hi: float, most: int = 6) -> tuple[float, float, list[float]]:
    """An axis from a round number at or below lo to one at or above hi in at most `most` round steps, and
    its ticks: every interval's ends fall between the first tick and the last, so no line runs past the
    numbers that read it (the finest such step, so that little of the width is left empty)."""
    lo, hi = (lo - 10.0, hi + 10.0) if hi - lo < 20.0 else (lo, hi)
    power = 10.0 ** math.floor(math.log10((hi - lo) / most))
    step = next(
        s
        for s in (m * power for m in (1, 2, 5, 10, 20))
        if math.ceil(hi / s - 1e-9) - math.floor(lo / s + 1e-9) <= most
    )
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return first * step, last * step, [k * step for k in range(first, last + 1)]


def elo_chart(rows: Sequence[Interval], label: str) -> Markup:
    """Each bot's Elo as a dot with its 95% interval as a line through it, one row per bot in the order
    given (the leaderboard's), on one Elo axis: the number that decides the order, as the table has it.

    Rows of HTML, each a name and an SVG track drawn in percentages of its width, not one SVG: a whole SVG
    scales down as one on a phone, and its names shrank to 6 px at 390 px. So the names are text at the
    page's size, beside their intervals on a wide screen and above them on a narrow one (style.html), and
    the tracks stretch to whatever width is left."""
    rows = [r for r in rows if math.isfinite(r.elo) and math.isfinite(r.pm)]
    if not rows:
        return Markup("")
    lo, hi, ticks = _span(min(r.elo - r.pm for r in rows), max(r.elo + r.pm for r in rows))

    def pc(x: float) -> str:
        return f"{(x - lo) / (hi - lo) * 100:.2f}%"

    grid = "".join(f'<line x1="{pc(t)}" x2="{pc(t)}" y1="0" y2="100%" class="grid"/>' for t in ticks)
    parts = [f'<div class="elo-chart" role="img" aria-label="{escape(label)}">']
    for r in rows:
        c, y = r.style.colour, ROW / 2
        parts.append(
            f'<div class="elo-row" title="{escape(r.name)}: Elo {escape(r.text)}">'
            f'<span class="elo-name">{escape(_short(r.name))}</span>'
            f'<svg class="elo-track" height="{ROW}">{grid}'
            f'<g class="elo" data-bot="{escape(r.name)}" data-elo="{r.elo:.3f}" data-pm="{r.pm:.3f}">'
            f"<title>{escape(r.name)}: Elo {escape(r.text)}</title>"
            f'<line x1="{"0%" if r.side == "below" else pc(r.elo - r.pm)}" '
            f'x2="{"100%" if r.side == "above" else pc(r.elo + r.pm)}" y1="{y}" y2="{y}" stroke="{c}" '
            'stroke-width="3"/>'
            f'<circle cx="{pc(r.elo)}" cy="{y}" r="5" fill="{c}" stroke="#fff"/></g></svg></div>'
        )
    parts.append(
        f'<div class="elo-row elo-axis"><span class="elo-name"></span><svg class="elo-track" height="{AXIS}">'
        '<line x1="0" x2="100%" y1="0.5" y2="0.5" class="axis"/>'
        + "".join(
            f'<text x="{pc(t)}" y="16" text-anchor="middle" class="tick">{_num(t)}</text>' for t in ticks
        )
        + f'<text x="100%" y="{AXIS - 4}" text-anchor="end" class="tick">Elo, 95% interval</text></svg></div>'
    )
    parts.append("</div>")
    return Markup("".join(parts))


def _short(name: str, most: int = 22) -> str:
    """A name that fits beside the Elo chart; the row's title gives it whole."""
    return name if len(name) <= most else name[: most - 1] + "…"


def _frame(label: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(label)}" '
        f'preserveAspectRatio="xMidYMid meet">'
        f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" fill="#fff" '
        'stroke="#d9dee5"/>'
    )


def _axes(yticks: list[float], py: object, xticks: list[float], px: object, xlabel: str) -> list[str]:
    assert callable(py) and callable(px)
    out = []
    for t in yticks:
        y = py(t)
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eceff3"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_num(t)}</text>')
    for t in xticks:
        x = px(t)
        out.append(
            f'<text x="{x:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle" class="tick">{_num(t)}</text>'
        )
    out.append(f'<text x="{W - RIGHT}" y="{H - 4}" text-anchor="end" class="tick">{escape(xlabel)}</text>')
    return out


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar of a histogram: its label on the x axis (or ''), height, and colour."""

    label: str
    count: int
    colour: str
    title: str


def bar_chart(bars: Sequence[Bar], label: str, mark_at: int | None = None, mark_text: str = "") -> Markup:
    """Bars side by side; `mark_at` draws a dashed line before bar `mark_at` (the time limit)."""
    if not bars:
        return Markup("")
    h = 200
    top = max(b.count for b in bars) or 1
    width = (W - LEFT - RIGHT) / len(bars)
    parts = [f'<svg class="chart" viewBox="0 0 {W} {h}" role="img" aria-label="{escape(label)}">']
    for t in _ticks(0, top, 4):
        y = 10 + (1 - t / top) * (h - 44)
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eceff3"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_num(t)}</text>')
    for k, b in enumerate(bars):
        bh = b.count / top * (h - 44)
        x = LEFT + k * width
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{10 + (h - 44) - bh:.1f}" width="{max(width - 2, 1):.1f}" '
            f'height="{bh:.1f}" fill="{b.colour}" data-count="{b.count}">'
            f"<title>{escape(b.title)}</title></rect>"
        )
        if b.label:
            parts.append(
                f'<text x="{x + width / 2:.1f}" y="{h - 18}" text-anchor="middle" class="tick">'
                f"{escape(b.label)}</text>"
            )
    if mark_at is not None:
        x = LEFT + mark_at * width
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="6" y2="{h - 30}" stroke="#1d232b" stroke-dasharray="4 3"/>'
            f'<text x="{x + 4:.1f}" y="18" class="tick">{escape(mark_text)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))

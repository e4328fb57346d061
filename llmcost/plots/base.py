"""What every figure shares: the lean template, the colours, dashes and markers per
scenario, titles that wrap, empty figures, legends below, and rounded axes."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from ..review import Results
from ..review.format import human_count

#: the trace types the figures draw: the template keeps its defaults for these alone
TRACE_TYPES = ("bar", "contour", "heatmap", "histogram", "scatter", "table", "waterfall")


def _lean_template(name: str = "plotly_white") -> go.layout.Template:
    """``name``'s defaults for :data:`TRACE_TYPES` and the 2-D plot only (no polar, ternary,
    3-D or map subplots): the figures look the same, and each carries 3 kB of template
    instead of 7 kB to the page (every figure sent holds its template). A Template object,
    validated once: given as a dict, plotly validates it again at every layout update
    (100-250 ms more per figure)."""
    import plotly.io as pio
    full = pio.templates[name].to_plotly_json()
    return go.layout.Template({"data": {k: v for k, v in full["data"].items() if k in TRACE_TYPES},
                               "layout": {k: v for k, v in full["layout"].items()
                                          if k not in ("polar", "ternary", "scene", "geo")}})


TEMPLATE = _lean_template()
#: titles wrap at about this many characters, so they never run past the plot's width
TITLE_CHARS = 75
#: one colour, dash and marker per scenario (current first), for bars and markers
SCENARIO_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2")
DASHES = ("solid", "dash", "dot", "dashdot")
SYMBOLS = ("circle", "diamond", "square", "triangle-up")
#: a readable label on top of a plot: white box, thin border
LABEL_BOX = dict(bgcolor="rgba(255,255,255,0.9)", bordercolor="#444", borderwidth=1, borderpad=3,
                 font=dict(size=12, color="#111"))
#: money on an axis: "$4M", "$1B" (plotly's "B" exponent format writes billions as B)
USD_AXIS = dict(tickprefix="$", exponentformat="B", separatethousands=True)


def _wrap(text: str, width: int = TITLE_CHARS) -> str:
    """Break a long title into lines of at most ``width`` characters at spaces (<br>)."""
    lines = []
    for part in text.split("<br>"):
        cur = ""
        for word in part.split(" "):
            if cur and len(cur) + 1 + len(word) > width:
                lines.append(cur)
                cur = word
            else:
                cur = f"{cur} {word}" if cur else word
        lines.append(cur)
    return "<br>".join(lines)


def _title(text: str, height: int, width: int = TITLE_CHARS) -> dict:
    wrapped = _wrap(text, width)
    lines = wrapped.count("<br>") + 1
    # centred on its own lines, in pixels from the figure's top: plotly anchors a multi-line
    # title's "top" and "bottom" on one of its lines, which clips it or runs it into the plot
    return dict(text=wrapped, x=0.01, xanchor="left", yref="container", yanchor="middle",
                y=1 - (8 + 11 * lines) / height)


def _fig(title: str, **layout) -> go.Figure:
    fig = go.Figure()
    layout.setdefault("height", 360)
    lines = _wrap(title).count("<br>") + 1
    fig.update_layout(title=_title(title, layout["height"]), template=TEMPLATE,
                      margin=dict(l=70, r=30, t=30 + 24 * lines, b=60),
                      hoverlabel=dict(namelength=-1), **layout)
    return fig


def _legend_below(fig: go.Figure, y: float = -0.22) -> go.Figure:
    """A horizontal legend under the plot (and its axis title): clear of the plot area and of
    any colorbar at the right."""
    fig.update_layout(legend=dict(orientation="h", x=0, xanchor="left", y=y, yanchor="top"))
    return fig


def _empty(title: str, why: str) -> go.Figure:
    fig = _fig(title)
    fig.add_annotation(text=why, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def _runs(results: Results, compare=(), label: str | None = None) -> list:
    """[(label, Results)], the current scenario first; its label is None when it is alone."""
    compare = tuple(compare or ())
    if not compare:
        return [(None, results)]
    return [(label or "current", results)] + [(str(lab), r) for lab, r in compare]


def _named(lab, name: str) -> str:
    return f"{lab}: {name}" if lab else name


def _tint(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _nice_step(x: float) -> float:
    """The smallest 1, 2, 2.5 or 5 x 10^k at least ``x``."""
    if not (x > 0 and math.isfinite(x)):
        return 1.0
    k = 10.0 ** math.floor(math.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * k >= x * (1 - 1e-12):
            return m * k
    return 10.0 * k


def _zero_axes(primary_max: float, secondary_max: float, ticks: int = 5):
    """Ranges and tick steps of two zero-based axes with the same number of rounded ticks, so
    their grid lines coincide: ((top, step), (top, step))."""
    s1 = _nice_step(max(primary_max, 0.0) * 1.05 / ticks)
    n = max(1, math.ceil(max(primary_max, 0.0) * 1.05 / s1))
    s2 = _nice_step(max(secondary_max, 0.0) * 1.05 / n)
    return (n * s1, s1), (n * s2, s2)


def _pow2_ticks(values, most: int = 10) -> dict:
    """Tick values at powers of two spanning ``values`` (GPU and node counts come in powers of
    two), at most ``most`` of them, written with thousands separators."""
    v = [float(x) for x in values if x is not None and math.isfinite(x) and x > 0]
    if not v:
        return {}
    lo, hi = math.floor(math.log2(min(v))), math.ceil(math.log2(max(v)))
    every = max(1, math.ceil((hi - lo + 1) / most))
    ticks = [2.0 ** k for k in range(lo, hi + 1, every)]
    return dict(tickvals=ticks, ticktext=[human_count(t) for t in ticks])


def _wrap_label(text: str, width: int = 16) -> str:
    return _wrap(str(text), width)

"""Tables as figures: cells formatted, and sized so no row is clipped at the narrowest
page."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .base import _fig, _title


def _cell(fmt: str, x) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "NO"
    return fmt.format(x)


#: a table's plot area at its narrowest (a 1,100 px page) [px], a character of its 12 px
#: font at its widest average [px], and a wrapped line's and a cell's padding [px]
TABLE_MIN_PX, TABLE_CHAR_PX, TABLE_LINE_PX, TABLE_PAD_PX = 540, 6.8, 17, 12


def _lines(text: str, chars: int) -> int:
    """Lines ``text`` wraps to at ``chars`` per line, at spaces (a longer word takes its own
    lines)."""
    n, cur = 0, 0
    for word in str(text).split():
        w = len(word)
        if cur and cur + 1 + w <= chars:
            cur += 1 + w
        else:
            n += 1 + max(0, (w - 1) // max(chars, 1))
            cur = w if w <= chars else w % max(chars, 1)
    return max(n, 1)


def _fit_table(fig: go.Figure, header: list, cells: list, widths=None) -> go.Figure:
    """Size a table so that no row is clipped or scrolled at the narrowest page: column
    weights from the longest word of each column (or ``widths``), each row's height from the
    lines its cells wrap to, the figure's height their sum."""
    if widths is None:
        widths = [max([len(w) for w in str(h).split()] + [len(w) for x in col
                                                         for w in str(x).split()] + [4])
                  for h, col in zip(header, cells)]
        widths = [min(w, 40) for w in widths]
    total = float(sum(widths))
    chars = [max(3, int(TABLE_MIN_PX * w / total / TABLE_CHAR_PX) - 1) for w in widths]
    head_lines = max(_lines(h, c) for h, c in zip(header, chars))
    rows = len(cells[0]) if cells else 0
    row_lines = [max(_lines(col[r], c) for col, c in zip(cells, chars)) for r in range(rows)]
    head_px = TABLE_PAD_PX + TABLE_LINE_PX * head_lines
    body_px = sum(TABLE_PAD_PX + TABLE_LINE_PX * n for n in row_lines)
    fig.update_traces(columnwidth=list(widths), header=dict(height=head_px),
                      cells=dict(height=TABLE_PAD_PX + TABLE_LINE_PX))
    top, bottom = fig.layout.margin.t or 60, 20
    height = int(top + head_px + body_px + bottom + 10)
    title = fig.layout.title.text or ""
    fig.update_layout(height=height, margin=dict(b=bottom),
                      title=_title(title.replace("<br>", " "), height))
    return fig


def frame_table(df: pd.DataFrame, title: str, columns: dict, widths=None) -> go.Figure:
    """The first 10 rows of ``df`` as a table, ``columns``: column -> (header, format); sized
    so that no row is clipped (:func:`_fit_table`)."""
    cols = [c for c in columns if c in df]
    fig = _fig(title, height=80 + 28 * min(len(df), 10))
    header = [columns[c][0] for c in cols]
    cells = [[columns[c][1].format(x) for x in df[c].head(10)] for c in cols]
    fig.add_trace(go.Table(header=dict(values=header), cells=dict(values=cells)))
    return _fit_table(fig, header, cells, widths)

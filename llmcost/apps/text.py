"""The one path by which a string reaches the page's HTML: every user-supplied or computed
string shown in a widget goes through :func:`esc` (escaped for text and attributes,
echoed values cut to a readable length). Markup is written only by the apps themselves."""

from __future__ import annotations

import html

#: an echoed value longer than this is cut (a 10 MB value is not repeated back)
MAX_ECHO_CHARS = 2_000


def esc(value, limit: int = MAX_ECHO_CHARS) -> str:
    """``value`` as text safe inside HTML text and quoted attributes, at most ``limit``
    characters (then "..." and how many were left out)."""
    s = str(value)
    if len(s) > limit:
        s = f"{s[:limit]}... ({len(s) - limit:,} more characters)"
    return html.escape(s, quote=True)

"""Widgets that share their Layout and style models.

Every ipywidgets DOMWidget carries a Layout model and most carry a style model, one each by
default: the review app's page was 436 widget models, 244 of them default Layouts and
styles. Each is created in the kernel, sent through the server and rebuilt by the browser
on every page load. Widgets made by :func:`make` share one Layout per distinct set of
layout keywords and one style per style class (ipywidgets allows a model to serve many
views). So a shared layout or style is never changed in place: give the widget a new one.
"""

from __future__ import annotations

import functools

import ipywidgets as W

_layouts: dict[tuple, W.Layout] = {}
_styles: dict[type, W.Widget] = {}


def shared_layout(**kw) -> W.Layout:
    """The kernel's one Layout with these keywords."""
    key = tuple(sorted(kw.items()))
    lay = _layouts.get(key)
    if lay is None or lay.comm is None:          # none yet, or closed
        lay = _layouts[key] = W.Layout(**kw)
    return lay


def style(cls: type) -> W.Widget:
    """The kernel's one default style of class ``cls`` (HTMLStyle, ButtonStyle...)."""
    st = _styles.get(cls)
    if st is None or st.comm is None:
        st = _styles[cls] = cls()
    return st


@functools.lru_cache(maxsize=None)
def _style_class(cls: type) -> type | None:
    trait = cls.class_traits().get("style")
    return None if trait is None else trait.klass


def make(cls: type, *args, layout: dict | W.Layout | None = None, **kw) -> W.Widget:
    """``cls(*args, **kw)`` with a shared layout (``layout`` as keywords) and, unless
    ``style`` is given, the shared default style of its kind."""
    if not isinstance(layout, W.Layout):
        layout = shared_layout(**(layout or {}))
    style_cls = _style_class(cls)
    if style_cls is not None and "style" not in kw:
        kw["style"] = style(style_cls)
    return cls(*args, layout=layout, **kw)

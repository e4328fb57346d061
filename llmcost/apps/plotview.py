"""A plot on an app's page, drawn with the workbook's own plotly.js bundle when it can be.

Plotly's Jupyter renderer (the ``jupyterlab-plotly`` extension) carries all of plotly.js:
a 4.8 MB script parsed on every fresh page's main thread, most of a warm visit's budget
(benchmarks/load.py measures it). The apps use seven trace types;
``static/plotly-llmcost.min.js`` is plotly.js built with only those (1.3 MB, the same
plotly.js version as the installed plotly; rebuilt by ``make plotly-bundle``, see
``static/README.md``).

The workbook's servers (``llmcost.server``, standalone and as a Jupyter server extension)
serve that file and tell their kernels where with ``LLMCOST_PLOTLY_URL``. A plot is then a
:class:`PlotView` (an anywidget that loads the bundle once per page, browser-cached, and
draws with ``Plotly.react``); anywhere else (JupyterLab, plain ``voila``, a headless run) it
is an ``Output`` holding the figure as plotly's own mime output.
:func:`plot_widget`, :func:`show_figure`, :func:`clear_figure` and :func:`shown_figure` hide
which.
"""

from __future__ import annotations

import json
import os

import anywidget
import ipywidgets as W
import traitlets

from .assets import SCRIPT_ID, URL_ENV
from .shared import shared_layout

MIME = "application/vnd.plotly.v1+json"

_ESM = r"""
// One script per page, shared by every plot: the page's own early <script id=...> (the
// workbook's servers put it in the HTML's head) or, without it, one added here.
function loadPlotly(url) {
  if (window.Plotly && window.Plotly.react) return Promise.resolve(window.Plotly);
  if (!window.__llmcPlotly) {
    window.__llmcPlotly = new Promise((resolve, reject) => {
      let s = document.getElementById("%(id)s");
      if (s && s.dataset.state === "failed") { s.remove(); s = null; }
      const fresh = !s;
      if (fresh) {
        s = document.createElement("script");
        s.id = "%(id)s";
        s.src = url;
        s.async = true;
      }
      s.addEventListener("load", () => resolve(window.Plotly));
      s.addEventListener("error", () => {
        window.__llmcPlotly = null;
        s.remove();                          // a later plot retries with a fresh tag
        reject(new Error("cannot load " + url));
      });
      if (fresh) document.head.appendChild(s);
    });
  }
  return window.__llmcPlotly;
}

export default {
  async render({ model, el }) {
    el.classList.add("llmc-plotview");
    let Plotly;
    try {
      Plotly = await loadPlotly(model.get("bundle_url"));
    } catch (e) {
      el.textContent = "The plot cannot be drawn: " + e.message + ". Reload the page.";
      el.classList.add("llmc-plot-error");
      return;
    }
    const draw = () => {
      const fig = model.get("figure") || {};
      if (!fig.data) { Plotly.purge(el); return; }       // nothing computed yet
      Plotly.react(el, fig.data, fig.layout || {}, { responsive: true, displaylogo: false });
    };
    // plotly measures its container: draw once the view is on the page with a width
    let drawn = false;
    const ro = new ResizeObserver(() => {
      if (!el.isConnected || el.clientWidth === 0) return;
      if (!drawn) { drawn = true; draw(); } else { Plotly.Plots.resize(el); }
    });
    ro.observe(el);
    const onChange = () => { if (drawn) draw(); };
    model.on("change:figure", onChange);
    return () => { ro.disconnect(); model.off("change:figure", onChange); Plotly.purge(el); };
  },
};
""" % {"id": SCRIPT_ID}

_CSS = """
.llmc-plotview {width: 100%; min-height: 40px}
.llmc-plot-error {color: #b00020; padding: 8px 0}
"""


class PlotView(anywidget.AnyWidget):
    """One plotly figure (its JSON: ``data`` and ``layout``) drawn by the bundle at
    ``bundle_url``."""

    _esm = _ESM
    _css = _CSS
    figure = traitlets.Dict().tag(sync=True)
    bundle_url = traitlets.Unicode("").tag(sync=True)


def bundle_url() -> str:
    """Where this kernel's server serves the bundle ("" when it does not)."""
    return os.environ.get(URL_ENV, "")


def plot_widget() -> W.Widget:
    """An empty plot: a :class:`PlotView` under a workbook server, else an ``Output``."""
    url = bundle_url()
    lay = shared_layout()
    return PlotView(bundle_url=url, layout=lay) if url else W.Output(layout=lay)


def figure_json(fig) -> dict:
    """A plotly figure as the JSON its renderers take (numpy arrays as lists)."""
    return json.loads(fig.to_json())


def show_figure(widget: W.Widget, fig) -> None:
    """Draw ``fig`` (a plotly Figure) in a widget made by :func:`plot_widget`."""
    if isinstance(widget, PlotView):
        widget.figure = figure_json(fig)
    else:
        title = fig.layout.title.text or ""
        widget.outputs = ({"output_type": "display_data",
                           "data": {MIME: figure_json(fig), "text/plain": f"<plotly figure: {title}>"},
                           "metadata": {}},)


def clear_figure(widget: W.Widget) -> None:
    """Empty a plot widget (its page waits for new results)."""
    if isinstance(widget, PlotView):
        widget.figure = {}
    else:
        widget.outputs = ()


def shown_figure(widget: W.Widget) -> dict | None:
    """The figure JSON a plot widget holds (None while empty)."""
    if isinstance(widget, PlotView):
        return widget.figure or None
    outs = getattr(widget, "outputs", ())
    return outs[0]["data"][MIME] if outs else None

"""Serving the workbook: standalone Voila (``python -m llmcost.server``, used by ``make
app``) and a Jupyter server extension for Voila running inside Jupyter (Binder,
JupyterHub, ``jupyter lab`` from the repository root). Both give the same landing page
instead of a file tree, the same kernel cap and "busy, retry" page.

Nothing else in llmcost imports this package (it needs voila and jupyter_server).
"""


def _jupyter_server_extension_points():
    return [{"module": "llmcost.server.extension"}]

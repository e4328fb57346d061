"""The workbook's apps (ipywidgets + plotly, served by Voila). A notebook is the app's cell,
``from llmcost.apps import show; app = show("review")``, then a commented cell to tinker with
in JupyterLab, which prints nothing under Voila (:func:`in_voila`)."""


def show(name: str):
    """Build and display the app served as ``notebooks/<name>.ipynb``."""
    from .base import run_app
    from .registry import app
    return run_app(app(name))


def in_voila() -> bool:
    """Whether this kernel serves a Voila page (Voila sets ``VOILA_KERNEL_ID`` in every
    kernel it starts): a notebook's tinker cell prints only in JupyterLab or a script, so
    a Voila page shows the app and nothing computed beside it."""
    import os
    return bool(os.environ.get("VOILA_KERNEL_ID"))

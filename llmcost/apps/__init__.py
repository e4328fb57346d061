"""The workbook's apps (ipywidgets + plotly, served by Voila). A notebook is one cell:
``from llmcost.apps import show; app = show("review")``."""


def show(name: str):
    """Build and display the app served as ``notebooks/<name>.ipynb``."""
    from .base import run_app
    from .registry import app
    return run_app(app(name))

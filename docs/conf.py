"""Sphinx configuration for llmcost's documentation (``make docs``).

No intersphinx and nothing else that reaches the network: CI builds the docs on a clean clone
with only the package registries reachable. Warnings are errors there (``-W --keep-going``).
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import gen  # noqa: E402  (docs/gen.py, needs the paths above)

project = "llmcost"
author = "the llmcost authors"
copyright = "2026, the llmcost authors"
release = version = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "generated/*.rst"]   # generated pages are included, not built alone
templates_path = []

autosummary_generate = True
autosummary_imported_members = False
# a package's page documents what the package itself defines; its __all__ re-exports are
# documented once, on their own module's page (llmcost.review.ladder is a module and a function)
autodoc_default_options = {"members": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"         # numpydoc's Parameters sections say the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()  # the docstring rules are tests (tests/test_docstrings.py)
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# MathJax from the theme's CDN is the only remote asset and loads in the reader's browser, not
# at build time.
html_theme = "furo"
html_title = "llmcost"
html_static_path = []


def _generate(app):
    gen.write_all()


def setup(app):
    app.connect("builder-inited", _generate)

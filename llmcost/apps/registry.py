"""Which apps the workbook has: every ``Panel`` subclass that sets ``name``, in the modules
of this package whose names end in ``_app``. The landing page, the navigation and the tests
read this list, so a new app is its module plus its one-cell notebook
(``notebooks/<name>.ipynb``)."""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys

#: name -> app class; ``Panel`` subclasses that set ``name`` register themselves here
#: (:meth:`llmcost.apps.base.Panel.__init_subclass__`), so this module imports no app
REGISTRY: dict[str, type] = {}


def register(cls: type) -> None:
    """Record an app class under its ``name``."""
    REGISTRY[cls.name] = cls


@functools.lru_cache(maxsize=1)
def _load() -> tuple:
    # the package's folders (its __path__), read from the package Python imported before
    # this module, not imported again: this module imports nothing above it
    for mod in pkgutil.iter_modules(sys.modules[__package__].__path__):
        if mod.name.endswith("_app"):
            importlib.import_module(f"{__package__}.{mod.name}")
    return tuple(sorted(REGISTRY.values(), key=lambda c: (c.order, c.name)))


def apps() -> tuple:
    """The app classes, in landing-page order (the review first)."""
    return _load()


def app(name: str) -> type:
    """The app class served as ``notebooks/<name>.ipynb``."""
    for cls in apps():
        if cls.name == name:
            return cls
    known = ", ".join(c.name for c in apps())
    raise KeyError(f"no app named {name!r} (apps: {known})")


def titles() -> dict:
    """name -> title, in order."""
    return {c.name: c.title for c in apps()}

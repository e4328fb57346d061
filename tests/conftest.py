"""Shared fixtures and the markers of the fast loop.

``make test-fast`` runs ``-m "not slow and not browser"``; ``make test`` (and CI) runs all.
A test that drives a browser must carry ``browser``; scenario grids, fuzzing, notebook
execution, servers and wheel builds carry ``slow``. The check below fails collection when a
test uses a browser fixture without its marker, so the fast loop never starts chromium.
"""

import pytest

from llmcost import catalog

BROWSER_FIXTURES = {"browser", "page", "voila"}


@pytest.fixture(scope="session")
def cat():
    """The shipped catalog (``data/*.csv``), loaded once per run."""
    return catalog.default()


def pytest_collection_modifyitems(config, items):
    unmarked = [item.nodeid for item in items
                if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ()))
                and item.get_closest_marker("browser") is None]
    if unmarked:
        raise pytest.UsageError("browser tests without @pytest.mark.browser: "
                                + ", ".join(unmarked[:5]))

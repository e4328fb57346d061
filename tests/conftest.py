"""Shared fixtures, the markers of the fast loop and the Hypothesis profiles.

``make test-fast`` runs ``-m "not slow and not browser and not grid"``; ``make test`` (and CI)
runs ``-m "not grid"``; ``make test-grid`` runs the catalog grids (``grid``) and every sampling
test with its full budget (``LLMCOST_BUDGET=full``, :mod:`budget`). A test that drives a
browser must carry ``browser``; whole reviews and app builds that take over about half a
second, fuzzing, notebook execution, servers and wheel builds carry ``slow``; a grid over the
whole catalog carries ``grid``. The check below fails collection when a test uses a browser
fixture without its marker, so the fast loop never starts chromium.
"""

import os

import pytest
from budget import FULL
from hypothesis import settings

from llmcost import catalog

# "budget": make test's fixed cost, derandomized so a CI failure replays; "full": make
# test-grid, random examples as many as each test names (tests size them with budget.examples)
settings.register_profile("budget", max_examples=20, deadline=None, derandomize=True,
                          print_blob=True)
settings.register_profile("full", max_examples=100, deadline=None, print_blob=True)
settings.load_profile("full" if FULL else "budget")

BROWSER_FIXTURES = {"browser", "page", "voila"}


@pytest.fixture(scope="module")
def browser():
    """A headless chromium per module (browser_support skips without it). Not for the session:
    Playwright's sync API keeps an event loop running in the main thread while it lives, and
    the in-process app tests that follow would see it (they draw asynchronously under a
    running loop) and asyncio.run would refuse to start."""
    import browser_support as bs
    with bs.sync_playwright() as p:
        b = bs.launch_browser(p)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    import browser_support as bs
    pg = bs.new_page(browser)
    yield pg
    bs.leave_page(pg)


@pytest.fixture(scope="session")
def voila():
    """One workbook server (``make app``'s, one-kernel pools) for every browser test."""
    import browser_support as bs
    port = bs.free_port()
    (bs.ROOT / "artifacts").mkdir(exist_ok=True)
    proc = bs.start_server(bs.browser_tests_server_cmd(port), bs.ROOT / "notebooks",
                           # one log per xdist worker: each worker starts its own server
                           bs.ROOT / "artifacts" / f"voila-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.log",
                           port=port)
    yield f"http://127.0.0.1:{port}/voila/render"
    bs.stop_server(proc)


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


"""The Download widget in a real browser under Voila, in both serving layouts: from the
repository root with the notebook one folder down, as Binder serves it (where a link to a
report written on the server returned 403), and from the notebooks folder, as `make app`
does. Everything lives in a tmp dir: nothing is left in the tree.

Two buttons: one sends every byte value (binary must arrive intact), one a real report of a
review (~4.8 MB, plotly.js inside) whose share link is built from the page address the
widget reports. The downloaded report is then opened from disk, offline, and must draw its
plots.
"""

import json
import sys
from pathlib import Path

import pytest
from browser_support import free_port, start_server, stop_server

pytestmark = pytest.mark.browser

# the payload the notebook sends, derived the same way here: every byte value, 4096 times
PAYLOAD = bytes(range(256)) * 4096

CELL = """\
import ipywidgets as W
from llmcost import plots
from llmcost.apps.download import Download
from llmcost.review import evaluate, headline_items
from llmcost.review.report import ReportScenario, render_report
from llmcost.scenario import Scenario

dl = Download()
dl.add_class("llmc-test-download")
binary = W.Button(description="binary")
binary.add_class("llmc-test-binary")
binary.on_click(lambda _: dl.send_file("every-byte.bin", bytes(range(256)) * 4096,
                                       "application/octet-stream"))

def send_report(_):
    res = evaluate(Scenario(gpus=512))
    head = [(label, text, flag.level if flag else None)
            for label, text, flag in headline_items(res, ("days", "gpus", "mfu")).values()]
    sc = ReportScenario("", head, [("GPUs", "512")], list(res.notes),
                        {"waterfall": plots.waterfall(res), "costs": plots.cost_by_option(res)})
    text = render_report([sc], title="llmcost: Architecture review",
                         share_url=dl.page_url + "?gpus=512")
    dl.send_file("llmcost-review-test.html", text.encode("utf-8"))

report = W.Button(description="report")
report.add_class("llmc-test-report")
report.on_click(send_report)
W.VBox([binary, report, dl])
"""


def _notebook(source: str) -> dict:
    return {"cells": [{"cell_type": "code", "execution_count": None, "id": "c0", "metadata": {},
                       "outputs": [], "source": source}],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                        "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture(scope="module", params=["repository-root", "notebooks"])
def served(request, tmp_path_factory):
    """Voila serving a tmp copy of the layout; yields the notebook's page address."""
    root = tmp_path_factory.mktemp("repo")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "download.ipynb").write_text(json.dumps(_notebook(CELL)))
    port = free_port()
    cwd = root if request.param == "repository-root" else root / "notebooks"
    proc = start_server(
        [str(Path(sys.executable).parent / "voila"), ".", "--no-browser", f"--port={port}",
         "--Voila.ip=127.0.0.1", "--MappingKernelManager.cull_interval=30",
         "--MappingKernelManager.cull_idle_timeout=60"],
        cwd, root / "voila.log", port=port, timeout_s=60)
    folder = "notebooks/" if request.param == "repository-root" else ""
    served.log = root / "voila.log"
    yield f"http://127.0.0.1:{port}/voila/render/{folder}download.ipynb"
    stop_server(proc)

def _open(page, url):
    page.goto(url, wait_until="commit", timeout=60_000)
    try:
        page.wait_for_selector(".llmc-test-binary button, button.llmc-test-binary",
                               timeout=90_000)
    except Exception as e:  # noqa: BLE001 - say what the page and Voila showed
        body = page.locator("body").inner_text()[-1500:]
        log = served.log.read_text()[-3000:]
        raise AssertionError(f"the notebook did not render: {e}\npage: {body}\nvoila: {log}")


def _status(page):
    return page.locator(".llmc-download-status").first


def test_binary_bytes_arrive_intact(served, page):
    url = served
    _open(page, url)
    assert not _status(page).is_visible()          # nothing to see until a download
    with page.expect_download(timeout=60_000) as info:
        page.locator(".llmc-test-binary button, button.llmc-test-binary").first.click()
    download = info.value
    assert download.suggested_filename == "every-byte.bin"
    assert Path(download.path()).read_bytes() == PAYLOAD
    status = _status(page)
    status.wait_for(state="visible", timeout=30_000)
    assert status.inner_text().strip() == "Downloaded: every-byte.bin"


def test_report_download_opens_offline(served, page, tmp_path):
    url = served
    _open(page, url)
    with page.expect_download(timeout=120_000) as info:
        page.locator(".llmc-test-report button, button.llmc-test-report").first.click()
    download = info.value
    assert download.suggested_filename == "llmcost-review-test.html"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    text = saved.read_text("utf-8")
    assert 4_000_000 < len(text.encode()) < 6_000_000        # plotly.js once + two figures
    # the share link is absolute, from the page address the widget reported
    assert f'href="{url}?gpus=512"' in text

    # the report from disk, with the network cut off: plotly.js is inside the file
    page.context.set_offline(True)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(saved.as_uri())
    page.wait_for_selector(".js-plotly-plot .gtitle", timeout=30_000)
    assert page.locator(".js-plotly-plot").count() == 2
    assert page.locator(".report-title").inner_text() == "llmcost: Architecture review"
    assert errors == []

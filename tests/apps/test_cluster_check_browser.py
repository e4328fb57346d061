"""The cluster check in chromium: files uploaded through the page, findings and the expected
curve drawn (issue 28)."""

from pathlib import Path

from browser_support import assert_no_error_text, open_app, shot

import pytest  # noqa: E402  (after browser_support, which skips without chromium)

pytestmark = pytest.mark.browser
DATA = Path(__file__).resolve().parents[1] / "data" / "cluster"


def test_uploads_show_findings_and_figures(voila, page):
    open_app(page, voila, "utilization", "?gpu=a100-80gb&model=llama3-8b&measured_gpus=8")
    page.locator(".llmc-check-nccl-tests .llmc-file-input").set_input_files(
        str(DATA / "nccl_all_reduce_collapse.txt"))
    page.wait_for_selector(".llmc-check-findings .llmc-finding-alert", timeout=60_000)
    text = page.locator(".llmc-check-findings").inner_text()
    assert "bandwidth collapse at 64 MiB" in text
    page.wait_for_selector(".llmc-plot-check-busbw .gtitle", timeout=60_000)
    assert "measured and expected" in page.locator(".llmc-plot-check-busbw .gtitle").text_content()
    page.locator(".llmc-check-train-log .llmc-file-input").set_input_files(
        str(DATA / "megatron_mixtral_8x7b_16xh100.log"))
    page.wait_for_selector(".llmc-plot-check-steps .gtitle", timeout=60_000)
    assert "median step: 5.471 s" in page.locator(".llmc-check-findings").inner_text()
    shot(page, "cluster-check")
    assert_no_error_text(page)

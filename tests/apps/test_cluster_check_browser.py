"""The cluster check in chromium: files uploaded through the page, findings and the expected
curve drawn."""

import shlex
import time
from pathlib import Path

import pytest  # noqa: E402  (after browser_support, which skips without chromium)
from browser_support import assert_no_error_text, open_app, shot
from cli.test_cli_robust import cli_json

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
    title = page.locator(".llmc-plot-check-busbw .gtitle")
    # no Rank lines: nothing judged against the fabric until the placement is given
    assert "placement unknown" in title.text_content()
    box = page.locator(".llmc-check-gpus-per-node input")
    box.fill("8")
    box.press("Tab")
    end = time.time() + 30
    while "measured and expected" not in title.text_content() and time.time() < end:
        page.wait_for_timeout(200)
    assert "measured and expected" in title.text_content()
    assert "--gpus-per-node 8" in page.locator(".llmc-check-command code").inner_text()
    page.locator(".llmc-check-train-log .llmc-file-input").set_input_files(
        str(DATA / "megatron_mixtral_8x7b_16xh100.log"))
    page.wait_for_selector(".llmc-plot-check-steps .gtitle", timeout=60_000)
    assert "median step: 5.471 s" in page.locator(".llmc-check-findings").inner_text()
    shot(page, "cluster-check")
    assert_no_error_text(page)


#: what the page colours red: an error next to a control, an infeasible headline, an alert
RED = ".llmc-err, .llmc-flag-infeasible, .llmc-finding-alert"


def red_shown(page) -> list:
    """The texts of what the page shows in red (an empty error slot beside a control is not
    shown)."""
    els = page.locator(RED)
    texts = [els.nth(i).inner_text().strip() for i in range(els.count())
             if els.nth(i).is_visible()]
    return [t for t in texts if t]


def test_the_page_and_the_command_line_give_one_answer(voila, page):
    # the same log, the same inputs: the page shows the command that gives its figures
    q = "?model=llama3-8b&measured_gpus=8&seq_len=8192&global_batch_tokens=65536&stack=fsdp"
    open_app(page, voila, "utilization", q)
    page.locator(".llmc-check-train-log .llmc-file-input").set_input_files(
        str(DATA / "torchtitan_llama3_8b_h100.log"))
    page.wait_for_selector(".llmc-check-command code", timeout=60_000)
    text = page.locator(".llmc-check-findings").inner_text()
    cmd = page.locator(".llmc-check-command code").inner_text()
    argv = [str(DATA / a) if a.endswith(".log") else a for a in shlex.split(cmd)[1:]]
    cli = cli_json(argv)
    st = cli["steps"]
    # torchtitan's own 34.3% MFU on 8 H100 (its log), the same on both
    assert st["gpus"] == 8 and 0.33 < st["mfu"] < 0.36
    assert f"MFU: {st['mfu']:.1%}" in text
    assert f"predicted MFU: {st['predicted_mfu']:.1%}" in text
    assert f"median step: {st['median_step_s']:.3f} s" in text
    for f in cli["findings"]:
        assert f"[{f['level']}] {f['what']}" in text
    assert_no_error_text(page)


def test_a_fresh_page_shows_nothing_red_and_labels_its_example(voila, page):
    open_app(page, voila, "utilization")
    assert red_shown(page) == []
    assert "Example run" in page.locator(".llmc-box-effective_utilization").inner_text()
    assert_no_error_text(page)
    # the landing card says the same: example data, not a measurement
    page.goto(f"{voila}/index.ipynb", wait_until="commit", timeout=60_000)
    page.wait_for_selector(".llmc-card-utilization .llmc-card-figures b", timeout=90_000)
    end = time.time() + 30
    while page.locator(".llmc-progress").count() and time.time() < end:
        page.wait_for_timeout(200)
    card = page.locator(".llmc-card-utilization").inner_text()
    assert "Example run's effective utilization" in card and "Measured" not in card
    assert red_shown(page) == []

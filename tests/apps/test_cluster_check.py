"""The utilization app's cluster check (issue 28): uploads read against the model, findings
and figures on the page; a bad file named, never a traceback."""

from pathlib import Path

import pytest

from llmcost.apps.utilization_app import UtilizationApp
from llmcost.apps.plotview import shown_figure

DATA = Path(__file__).resolve().parents[1] / "data" / "cluster"
TITAN = ("model=llama3-8b&gpu=h100-sxm&measured_gpus=8&seq_len=8192&global_batch_tokens=65536"
         "&stack=fsdp")


def _upload(p, kind, name):
    p.load_check_file(kind, name, (DATA / name).read_text())


def test_nccl_tests_upload_shows_findings_and_the_expected_curve():
    p = UtilizationApp(query="gpu=a100-80gb&fabric=ib-hdr")
    _upload(p, "nccl_tests", "nccl_all_reduce_collapse.txt")
    assert "[alert]</b> all_reduce on 24 ranks: bandwidth collapse at 64 MiB" in p.check_note.value
    fig = shown_figure(p.check_busbw)
    measured, expected = fig["data"]
    assert measured["y"][6] == 5.27 and measured["x"][6] == 67108864
    assert len(expected["y"]) == 10
    assert shown_figure(p.check_steps) is None


def test_train_log_upload_shows_mfu_against_the_prediction():
    p = UtilizationApp(query=TITAN)
    _upload(p, "train_log", "torchtitan_llama3_8b_h100.log")
    st = p.check_result["steps"]
    # torchtitan's own MFU 34.3% (6N + 12LHQT over the H100's dense peak)
    assert st["mfu"] == pytest.approx(0.3434, rel=0.02) and st["gpus"] == 8
    assert "MFU: 34.3%" in p.check_note.value
    steps = shown_figure(p.check_steps)
    assert steps["data"][0]["x"] == [210, 220, 230, 240, 250]
    # measured, the band's top and bottom (filled between), the prediction
    assert [d["y"][0] for d in steps["data"][1:]] == pytest.approx(
        [st["predicted_step_time_band_s"][1], st["predicted_step_time_band_s"][0],
         st["predicted_step_time_s"]])


def test_a_bad_file_is_named_and_clears_the_figures():
    p = UtilizationApp(query="gpu=a100-80gb&fabric=ib-hdr")
    _upload(p, "nccl_tests", "nccl_all_reduce_collapse.txt")
    p.load_check_file("nccl_tests", "<b>x</b>.txt", "   1024 256 float sum -1 abc 1 1 0")
    assert "Could not check &lt;b&gt;x&lt;/b&gt;.txt: line 1: expected a non-negative" \
        in p.check_note.value
    assert shown_figure(p.check_busbw) is None and p.check_result is None


def test_dcgm_upload_and_a_too_large_file():
    p = UtilizationApp(query="")
    _upload(p, "dcgm", "dcgm_exporter_readme.prom")
    assert "DCGM fields not available" in p.check_note.value
    p._check_failed("'big.log' is 30,000,000 bytes; a file up to 20,000,000 bytes is read")
    assert "llmc-err" in p.check_note.value and "20,000,000" in p.check_note.value


def test_a_changed_gpu_checks_the_uploads_again():
    p = UtilizationApp(query="gpu=a100-80gb&fabric=ib-hdr")
    _upload(p, "nccl_tests", "nccl_all_reduce_p4de_a100_16.txt")
    before = p.check_result["collectives"][-1]["expected_busbw_gb_per_s"]
    p.set(gpu="h100-sxm")
    after = p.check_result["collectives"][-1]["expected_busbw_gb_per_s"]
    # 2 nodes over ib-hdr's 8 x 25 GB/s x 0.9: the NICs bind on both GPUs, NVLink does not
    assert after == pytest.approx(before, rel=1e-9)
    assert "h100-sxm over nvlink4" in p.check_note.value

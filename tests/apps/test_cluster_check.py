"""The utilization app's cluster check: uploads read against the model, findings
and figures on the page; a bad file named, never a traceback."""

import json
import shlex
from pathlib import Path

import pytest

from llmcost.apps.plotview import shown_figure
from llmcost.apps.utilization_app import UtilizationApp
from llmcost.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "cluster"
TITAN = ("model=llama3-8b&gpu=h100-sxm&measured_gpus=8&seq_len=8192&global_batch_tokens=65536"
         "&stack=fsdp")


def _upload(p, kind, name):
    p.load_check_file(kind, name, (DATA / name).read_text())


def cli_json(capsys, argv):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_nccl_tests_upload_shows_findings_and_the_expected_curve(capsys):
    p = UtilizationApp(query="gpu=a100-80gb&fabric=ib-hdr")
    _upload(p, "nccl_tests", "nccl_all_reduce_collapse.txt")
    assert "[alert]</b> all_reduce on 24 ranks: bandwidth collapse at 64 MiB" in p.check_note.value
    # no Rank lines: the placement is asked for, not taken from the GPU's node size
    assert "placement unknown" in p.check_note.value
    fig = shown_figure(p.check_busbw)
    assert [d["name"] for d in fig["data"]] == ["all_reduce measured"]
    assert fig["data"][0]["y"][6] == 5.27 and fig["data"][0]["x"][6] == 67108864
    p.check_placement["gpus_per_node"].value = 8
    measured, expected = shown_figure(p.check_busbw)["data"]
    assert len(expected["y"]) == 10
    assert shown_figure(p.check_steps) is None
    # one answer: the command the page shows gives the page's figures
    cmd = p.check_command()
    assert cmd == ("llmcost check --query 'gpu=a100-80gb&fabric=ib-hdr' --nccl-tests "
                   "nccl_all_reduce_collapse.txt --gpus-per-node 8")
    argv = [str(DATA / a) if a.endswith(".txt") else a for a in shlex.split(cmd)[1:]]
    cli = cli_json(capsys, argv)
    assert cli["collectives"] == p.check_result["collectives"]
    assert cli["findings"] == p.check_result["findings"]
    assert expected["y"] == pytest.approx([c["expected_busbw_gb_per_s"]
                                           for c in cli["collectives"]])


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
    p.check_placement["gpus_per_node"].value = 8         # p4de: 8 A100 per instance
    before = p.check_result["collectives"][-1]["expected_busbw_gb_per_s"]
    p.set(gpu="h100-sxm")
    after = p.check_result["collectives"][-1]["expected_busbw_gb_per_s"]
    # 2 nodes over ib-hdr's 8 x 25 GB/s x 0.9: the NICs bind on both GPUs, NVLink does not
    assert after == pytest.approx(before, rel=1e-9)
    assert "h100-sxm over nvlink4" in p.check_note.value


def test_a_log_without_a_model_is_not_judged_against_the_pages_model(capsys):
    # the page's model control was not set: its default (a catalog model) does not stand in
    # for the run; the log (torchtitan, no flavor printed) is reported by its own figures
    p = UtilizationApp(query="gpu=h100-sxm&measured_gpus=8")
    _upload(p, "train_log", "torchtitan_llama3_8b_h100.log")
    st = p.check_result["steps"]
    assert st["mfu"] is None and st["model"] is None
    assert p.check_result["findings"][0]["what"] == "MFU not judged"
    assert "the Model control" in p.check_note.value
    # torchtitan's own figures: 5,863 tokens/s per GPU (median of steps 200-250), 34.3%
    assert "tokens/s per GPU (the log&#x27;s): 5,863" in p.check_note.value
    assert "MFU the log prints: 34.3%" in p.check_note.value
    assert shown_figure(p.check_steps)["layout"]["title"]["text"] == \
        "Step time over the run, measured"
    argv = [str(DATA / a) if a.endswith(".log") else a
            for a in shlex.split(p.check_command())[1:]]
    assert cli_json(capsys, argv)["steps"] == st
    # the model set on the page: judged against it
    p.set(model="llama3-8b")
    assert p.check_result["steps"]["mfu"] == pytest.approx(0.3434, rel=0.02)


def test_example_figures_are_labelled_as_an_example_and_never_above_the_peak():
    p = UtilizationApp(query="", build=False)
    card = p.card(p.compute(p.scenario))
    assert card["effective_utilization"][0] == "Example run's effective utilization"
    assert card["run"][0].startswith("Example run")
    # 4.19B tokens of Llama 3 70B on 8 GPUs in 2.8 h: 6 x 70.6B x 4.19e9 / (8 x 989.4e12 x
    # 10,080 s) ~ 22x the peak: said, not shown as a percentage
    p = UtilizationApp(query="measured_gpus=8", build=False)
    res = p.compute(p.scenario)
    label, text, flag = p.headline(res)["effective_utilization"]
    assert label == "Measured effective utilization" and flag.level == "infeasible"
    assert text.startswith("above 100% of peak (2") and "%" not in text.split("(")[1]
    assert all("%" not in n.split("above")[0] for n in p.note_lines(res))

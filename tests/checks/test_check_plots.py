"""The cluster-check figures draw the check's own numbers."""

from pathlib import Path

from llmcost import plots
from llmcost.checks import check as chk
from llmcost.checks import nccl_tests, train_log

DATA = Path(__file__).resolve().parents[1] / "data" / "cluster"


def test_busbw_figure_is_the_checks_rows(cat):
    name = "nccl_all_reduce_p5_h100_16.txt"
    g = cat.gpu("h100-sxm")
    out = chk.check(chk.Measured(nccl_tests.read((DATA / name).read_text(), name=name)),
                    hardware=chk.Hardware(g, cat.fabric(g.scale_up), cat.fabric("aws-efa-p5")),
                    placement=chk.Placement(nodes=2))
    fig = plots.cluster_busbw(out)
    measured, expected = fig.data
    assert list(measured.y) == [r["busbw_gb_per_s"] for r in out["collectives"]]
    assert measured.y[-1] == 487.09 and list(measured.x)[-1] == 17179869184
    assert list(expected.y) == [r["expected_busbw_gb_per_s"] for r in out["collectives"]]
    assert fig.layout.xaxis.type == "log"
    assert "no nccl-tests" in plots.cluster_busbw({"collectives": []}).layout.annotations[0].text


def test_steps_figure():
    log = train_log.read((DATA / "torchtitan_llama3_8b_h100.log").read_text())
    fig = plots.cluster_steps(log.step, log.step_time_s, 1.136)
    measured, predicted = fig.data
    # the first logged step has no step time (nothing before it to time against)
    assert list(measured.x) == [210, 220, 230, 240, 250]
    assert list(predicted.y) == [1.136, 1.136]
    empty = train_log.read((DATA / "nemo2_esm2_bionemo.log").read_text())
    assert len(plots.cluster_steps(empty.step, empty.step_time_s).data) == 1

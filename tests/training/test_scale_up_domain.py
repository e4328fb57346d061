"""The scale-up (NVLink) domain is a property of the system, not of the billing node: TP and
CP stay on NVLink across a GB200 NVL72 rack although its trays hold 4 GPUs."""

from dataclasses import replace

import pytest

from llmcost import catalog
from llmcost.training import planner
from llmcost.training.hardware import Hardware
from llmcost.training.layout import Layout
from llmcost.training.step import Options, predict_step

CAT = catalog.default()


def tp_comm(gpu, tp=8):
    m = CAT.model("llama3-70b")
    p = predict_step(m, Hardware(gpu, CAT.fabric(gpu.scale_up), CAT.fabric("ib-xdr")), Layout(gpus=512, tp=tp, pp=4,
                                                                                              global_batch=256,
                                                                                              zero_stage=1,
                                                                                              sequence_parallel=True,
                                                                                              flash_attention=True),
                     options=Options(flash_attention=True))
    return float(p.tp_comm_s)


def test_tp8_on_gb200_runs_over_nvlink():
    gb200 = CAT.gpu("gb200")
    assert gb200.gpus_per_node == 4 and gb200.scale_up_domain == 72
    # the same GPU as if its NVLink domain ended at the 4-GPU tray: TP8 would cross the
    # scale-out fabric, which is several times slower than NVLink5
    tray_only = replace(gb200, scale_up_domain_gpus=4)
    assert tp_comm(gb200) < tp_comm(tray_only) / 2
    # and the 72-GPU domain is NVLink for TP8 exactly as an 8-GPU HGX node is
    hgx_like = replace(gb200, gpus_per_node=8, scale_up_domain_gpus=8)
    assert tp_comm(gb200) == pytest.approx(tp_comm(hgx_like))


@pytest.mark.slow
def test_planner_lets_tp_span_the_domain():
    m = CAT.model("llama3-405b")
    gb200, b200 = CAT.gpu("gb200"), CAT.gpu("b200")
    up = CAT.fabric("nvlink5")
    P = planner.plan(m, Hardware(gb200, up, CAT.fabric("ib-xdr")), 1152, 1152)
    # TP up to the 72-GPU domain's largest power of two that divides the heads
    assert P.layouts["tp"].max() > gb200.gpus_per_node
    Q = planner.plan(m, Hardware(b200, up, CAT.fabric("ib-xdr")), 1152, 1152)
    assert Q.layouts["tp"].max() <= b200.gpus_per_node

"""A review without a fabric runs on the one the GPU's systems ship with ("auto"), as
`predict`, `plan` and `size` do without --fabric: one default, one answer."""

import json

import pytest

from llmcost import catalog
from llmcost.cli import main
from llmcost.review import evaluate
from llmcost.scenario import Scenario

CAT = catalog.default()


def run(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_gpu_names_a_scale_out_fabric_of_the_catalog():
    fabrics = CAT.fabrics().set_index("id")
    for gid in CAT.gpus()["id"]:
        f = CAT.gpu(gid).usual_scale_out
        assert fabrics.loc[f, "kind"] == "scale_out", gid


@pytest.mark.parametrize("gpu, fabric", [
    # DGX A100 datasheet: 8 ConnectX-6 HDR 200 Gb/s; DGX H100/H200/B200: 8 ConnectX-7 400 Gb/s
    # (DGX BasePOD reference architecture); DGX GB200 SuperPOD: NDR 400 Gb/s; B300/GB300:
    # ConnectX-8 800 Gb/s; DeepSeek's H800 nodes: InfiniBand at 50 GB/s per GPU (V3 §3.2.2)
    ("a100-40gb", "ib-hdr"), ("a100-80gb", "ib-hdr"), ("h100-sxm", "ib-ndr"),
    ("h200", "ib-ndr"), ("h800", "ib-ndr"), ("b200", "ib-ndr"), ("gb200", "ib-ndr"),
    ("b300", "ib-xdr"), ("gb300", "ib-xdr")])
def test_the_usual_fabric_is_the_reference_system_s(gpu, fabric):
    assert CAT.gpu(gpu).usual_scale_out == fabric
    link_gbit = {"ib-hdr": 200, "ib-ndr": 400, "ib-xdr": 800}[fabric]
    assert CAT.fabric(fabric).bandwidth_gb_per_s_per_gpu == link_gbit / 8


def test_a_review_without_a_fabric_takes_the_gpu_s_usual_one(capsys):
    assert Scenario().fabric == "auto"
    q = "model=llama2-7b&gpu=a100-80gb&gpus=256&tokens=2e11"
    auto = run(capsys, "review", "--query", q)
    hdr = run(capsys, "review", "--query", q + "&fabric=ib-hdr")
    ndr = run(capsys, "review", "--query", q + "&fabric=ib-ndr")
    assert auto["fabric"] == hdr["fabric"] == "ib-hdr" and ndr["fabric"] == "ib-ndr"
    assert auto["gpu_hours"] == hdr["gpu_hours"]
    # HDR carries half NDR's bytes per second: the same run cannot be faster on it
    assert hdr["gpu_hours"] >= ndr["gpu_hours"]
    # the link keeps "auto" implicit; the bandwidth control shows the figure in use
    assert auto["scenario"]["fabric"] == "auto"
    s, _ = Scenario.from_query(q)
    assert "fabric" not in s.to_query()
    assert evaluate(s).inputs.resolved["fabric_gb_per_s_per_gpu"] == 25.0
    # predict without --fabric answers on the same fabric
    pred = run(capsys, "predict", "--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "256",
               "--tp", "1", "--pp", "1", "--global-batch", "512", "--seq-len", "4096")
    assert pred["fabric"] == "ib-hdr"


def test_auto_follows_the_gpu_and_a_named_fabric_is_kept():
    s, _ = Scenario.from_query("model=llama3-70b&gpu=gb300&gpus=1152&tokens=1e12")
    assert evaluate(s).inputs.scale_out.id == "ib-xdr"
    s, _ = Scenario.from_query("model=llama3-70b&gpu=gb300&gpus=1152&tokens=1e12&fabric=ib-ndr")
    assert evaluate(s).inputs.scale_out.id == "ib-ndr"

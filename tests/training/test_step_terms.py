"""The step-time terms one by one (llmcost.training.step): each term function against its
equation worked by hand, the composition against the terms, and the one list of their names."""

import numpy as np
import pytest

from llmcost.cli import main
from llmcost.training import planner
from llmcost.training import step as st
from llmcost.training.arch import ModelSpec
from llmcost.training.comm import Links
from llmcost.training.hardware import FabricSpec, Hardware
from llmcost.training.layout import Layout

# round numbers so every figure below can be checked on paper: NVLink 400 GB/s per
# direction, 2 us per step, 80% achievable; a fabric of 50 GB/s, 10 us, 90%
UP = FabricSpec(id="up", name="test NVLink", kind="scale_up", bandwidth_gb_per_s_per_gpu=400.0,
                latency_us=2.0)
OUT = FabricSpec(id="out", name="test fabric", kind="scale_out", bandwidth_gb_per_s_per_gpu=50.0,
                 latency_us=10.0, efficiency=0.9)
NVL = 0.8
LINKS = Links(UP, OUT, 8, NVL)


def test_tensor_parallel_four_ring_allreduces_per_layer_six_with_full_recompute():
    # M = 4096 tokens, h = 8192, t = 8 in one 8-GPU domain: S = 2 M h bytes (BF16) per
    # all-reduce; a ring costs 2 (n-1) alpha + 2 (n-1)/n S / (eta B) (Narayanan 2021 §3.3:
    # two all-reduces forward, two backward)
    S = 2 * 4096 * 8192
    ring = 2 * 7 * 2e-6 + 2 * 7 / 8 * S / (0.8 * 400e9)
    got = st.tensor_parallel_comm_s(4096, 8192, 8, np.array(["none", "full"]), LINKS)
    assert got == pytest.approx([4 * ring, 6 * ring], rel=1e-12)
    # 80% hidden behind the GEMMs (TP communication overlap) leaves a fifth
    hidden = st.tensor_parallel_comm_s(4096, 8192, 8, "none", LINKS, overlap=0.8)
    assert hidden == pytest.approx(0.2 * 4 * ring, rel=1e-12)
    # t = 1 has no collective
    assert st.tensor_parallel_comm_s(4096, 8192, 1, "full", LINKS) == 0.0


def test_context_parallel_ring_is_three_passes_of_kv_less_the_attention_it_hides_behind():
    # c = 4: 3 ring steps, each passing K and V (2 x 2 bytes x n_kv d_h per token) of
    # M = 8192 tokens, n_kv = 8, d_h = 128, t = 2 (4 KV heads each), x 3 (forward, and
    # K/V plus their gradients backward); t c = 8 fits the domain: NVLink
    kv = 8192 * 2.0 * 8 * 128 / 2 * 2.0
    link = 2e-6 + kv / (0.8 * 400e9)
    ring = 3.0 * 3 * link
    assert st.context_parallel_comm_s(8192, 8, 128, 2, 4, 0.0, LINKS) \
        == pytest.approx(ring, rel=1e-12)
    assert st.context_parallel_comm_s(8192, 8, 128, 2, 4, ring / 2, LINKS) \
        == pytest.approx(ring / 2, rel=1e-12)
    assert st.context_parallel_comm_s(8192, 8, 128, 2, 4, 2 * ring, LINKS) == 0.0
    # c = 1: no ring
    assert st.context_parallel_comm_s(8192, 8, 128, 2, 1, 0.0, LINKS) == 0.0


def test_expert_all_to_all_inside_and_across_the_domain():
    # M = 4096 tokens, t = 1, k = 8 experts per token, h = 2048, BF16: S = M k h 2 bytes per
    # rank, load imbalance 1.25 on the busiest. EP 8 inside an 8-GPU domain: 7/8 of S over
    # NVLink; 4 all-to-alls (dispatch, combine; forward, backward), all layers MoE
    S = 4096 * 8 * 2048 * 2.0 * 1.25
    one = 2e-6 + 7 / 8 * S / (0.8 * 400e9)
    moe = ModelSpec(layers=2, hidden=2048, heads=16, vocab=32000, seq_len=4096, moe_experts=16,
                    moe_top_k=8, moe_ffn_hidden=768)
    got = st.expert_parallel_comm_s(4096, moe, 8, 1, False, LINKS, imbalance=1.25)
    assert got == pytest.approx(4 * one, rel=1e-12)
    # EP 16 over two domains: 8/16 of S leaves through the NIC, slower than the 7/16 on
    # NVLink; recomputed (6 all-to-alls), half the layers MoE, 71% hidden (1F1B overlap)
    across = 10e-6 + 8 / 16 * S / (0.9 * 50e9)
    half_moe = moe.with_(moe_dense_layers=1)
    got = st.expert_parallel_comm_s(4096, half_moe, 16, 1, True, LINKS, imbalance=1.25,
                                    overlap=0.71)
    assert got == pytest.approx(0.5 * 6 * across * 0.29, rel=1e-12)


def test_pipeline_sends_scatter_over_tp_and_cross_nodes_when_stages_sit_apart():
    # 2 v sends of M h 2 / t bytes per micro-batch (Megatron's scatter/gather, §4.1)
    msg = 4096 * 8192 * 2.0 / 8
    # d t c = 8 ranks between neighbours: the next stage is on another 8-GPU node
    got = st.pipeline_p2p_s(4096, 8192, 8, 1, 1, 4, 2, LINKS)
    assert got == pytest.approx(2 * 2 * (10e-6 + msg / (0.9 * 50e9)), rel=1e-12)
    # t = 2, d = 2: 4 ranks apart, inside the node
    msg2 = 4096 * 8192 * 2.0 / 2
    got = st.pipeline_p2p_s(4096, 8192, 2, 1, 2, 4, 1, LINKS)
    assert got == pytest.approx(2 * (2e-6 + msg2 / (0.8 * 400e9)), rel=1e-12)
    assert st.pipeline_p2p_s(4096, 8192, 8, 1, 1, 1, 1, LINKS) == 0.0


def test_bubble_is_megatrons_fraction_of_the_ideal_time():
    # Narayanan 2021 §2.2: bubble / ideal = (p - 1) / (v m); ideal = m t_mb
    p, v, m, t_mb = 8, 2, 16, 0.5
    assert st.pipeline_bubble_s(p, v, t_mb) == pytest.approx(
        st.pipeline_bubble_fraction(p, m, v) * m * t_mb, rel=1e-12)
    assert st.pipeline_bubble_s(p, v, t_mb) == pytest.approx(1.75)
    assert st.pipeline_bubble_s(1, 1, t_mb) == 0.0


def test_data_parallel_exposure_by_zero_stage():
    # T_AR = 2 s, stage compute 3 s per micro-batch (forward 1, backward 2), m = 4
    T, tmb, m = 2.0, 3.0, 4
    zero = np.array([0, 1, 2])
    # nothing overlapped: ZeRO 0-1 pay T once, ZeRO-2 m reduce-scatters (T/2 each) + one
    # all-gather (T/2)
    got = st.data_parallel_comm_s(st.DataParallelCollectives(T, 0.0, 0.0), zero, m, tmb, 1.0, 10, overlap=0.0)
    assert got == pytest.approx([2.0, 2.0, 4 * 1.0 + 1.0])
    # 90% overlappable: ZeRO 0-1 hide 1.8 s behind the 2 s backward, 0.2 s stays; ZeRO-2's
    # 4 reduce-scatters (3.6 s overlappable) hide behind 3 x 3 + 2 s, its gather (0.9 s)
    # behind the 1 s forward
    got = st.data_parallel_comm_s(st.DataParallelCollectives(T, 0.0, 0.0), zero, m, tmb, 1.0, 10, overlap=0.9)
    assert got == pytest.approx([0.2, 0.2, 0.4 + 0.1])
    # ZeRO-3: zero3_exposed_comm_s with a layer's forward = a third of its compute
    got = st.data_parallel_comm_s(st.DataParallelCollectives(T, 0.05, 0.05), 3, m, tmb, 0.3, 10, overlap=0.9)
    assert got == pytest.approx(st.zero3_exposed_comm_s(0.05, 0.05, 0.1, 0.2, 10, m), rel=1e-12)


def test_optimizer_reads_and_writes_every_state_once():
    # 1e9 parameters x 16 bytes (BF16 weights and grads, fp32 master and Adam moments) at
    # 3.35 TB/s (H100 SXM): 2 x 16 GB / 3.35 TB/s = 9.55 ms; FP8 casts under ZeRO-3, m = 8
    assert st.optimizer_step_s(16e9, 3.35e12) == pytest.approx(2 * 16e9 / 3.35e12, rel=1e-12)
    assert st.optimizer_step_s(16e9, 3.35e12, 1e-3, 8) == pytest.approx(9.552e-3 + 8e-3,
                                                                        rel=1e-3)


def test_logits_gemm_and_softmax_by_hand():
    # M = 2048, h = 4096, V = 32000, t = 2 on 1 PFLOP/s and 4 TB/s, e_max 0.5, k = 1,
    # gamma = 5: 6 V h M / t FLOPs at e_max; 6 (M h + h V/t + M V/t) elements x 1 byte-
    # equivalent each (k); gamma x 4 M V / t bytes of softmax
    cal = st.Calibration(matmul_efficiency=0.5, gemm_traffic=1.0, elementwise_traffic=5.0)
    M, h, V = 2048, 4096, 32000
    want = (6 * V * h * M / 2 / (1e15 * 0.5) + 6 * (M * h + h * V / 2 + M * V / 2) / 4e12
            + 5.0 * 4 * M * V / 2 / 4e12)
    assert st.logits_s(M, h, V, 2, 1e15, 4e12, cal) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("kw", [
    dict(gpus=64, tp=8, pp=4, global_batch=512, interleave=2, recompute="selective"),
    dict(gpus=128, tp=4, pp=2, cp=2, global_batch=256, zero_stage=3, recompute="full"),
    dict(gpus=64, tp=2, pp=1, global_batch=128, zero_stage=2, sequence_parallel=True),
])
def test_terms_add_up_to_the_step(cat, kw):
    # t_step = m t_mb + bubble + T_dp + t_opt with m t_mb = compute + TP + CP + EP + p2p
    g = cat.gpu("h100-sxm")
    p = st.predict_step(cat.model("llama3-70b"), Hardware(g, cat.fabric(g.scale_up), cat.fabric("ib-ndr")),
                        Layout(**kw, flash_attention=False), seq_len=8192)
    assert sum(float(getattr(p, k)) for k in st.STEP_TERMS) == pytest.approx(
        float(p.step_time_s), rel=1e-12)


def test_step_terms_are_declared_once_and_read_by_cli_and_planner():
    fields = [k for k in st.StepPrediction._fields if k.endswith("_s")
              and k not in ("step_time_s", "tokens_per_s")]
    assert sorted(st.STEP_TERMS) == sorted(fields)
    assert st.StepPrediction.BREAKDOWN == tuple(st.STEP_TERMS)
    assert not hasattr(planner, "BREAKDOWN_LABELS")
    best = {"step_time_s": 1.0, "fits": True, **{k: 0.0 for k in st.STEP_TERMS}}
    other = dict(best, step_time_s=1.5, pp_bubble_s=0.5)
    other.update(gpus=8, tp=8, pp=1, cp=1, ep=1, etp=1, dp=1, micro_batch=1, interleave=1,
                 zero_stage=0, recompute="none", sequence_parallel=False)
    # the planner's sentence names the term by its label: 0.5 s more bubble, 50% slower
    assert planner.why_slower(best, other).endswith(
        "is +50.0% per step (+0.5 s): +0.5 s pipeline bubble")


def test_cli_predict_explains_every_term(capsys):
    assert main(["predict", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8",
                 "--tp", "2", "--pp", "2", "--global-batch", "16"]) == 0
    out = capsys.readouterr().out
    for term in st.STEP_TERMS.values():
        assert term.explanation in out

"""Mixture-of-experts and MLA architectures: parameter counts, active parameters, FLOPs
."""

import json

import pytest

from llmcost import InputError, catalog
from llmcost.cli import main
from llmcost.training import flops as fl
from llmcost.training import moe
from llmcost.training.arch import ModelSpec

CAT = catalog.default()

#: published (total, active) parameters [B], each from the model's own report or card
PUBLISHED = {
    # DeepSeek-V3 report, arXiv:2412.19437, Abstract and §4.2: 671B total, 37B activated
    "deepseek-v3": (671.0, 37.0),
    # Mixtral paper, arXiv:2401.04088, §2: 47B (46.7B) parameters, 13B (12.9B) active
    "mixtral-8x7b": (46.7, 12.9),
    # Mistral AI, "Cheaper, Better, Faster, Stronger" (2024-04): 141B, 39B active
    "mixtral-8x22b": (141.0, 39.0),
    # Qwen3 technical report, arXiv:2505.09388, Table 2 / model cards: 30.5B, 3.3B
    "qwen3-30b-a3b": (30.5, 3.3),
    # ibid.: 235B total, 22B activated
    "qwen3-235b-a22b": (235.0, 22.0),
    # gpt-oss model card, arXiv:2508.10925, Table 1: 116.83B total, 5.13B active
    "gpt-oss-120b": (116.83, 5.13),
    # ibid.: gpt-oss-20b 20.91B total, 3.61B active
    "gpt-oss-20b": (20.91, 3.61),
    # Meta Llama 4 model card: 400B total / 17B active (Maverick), 109B / 17B (Scout),
    # the totals including the vision encoder (~0.9B) that the text model leaves out
    "llama4-maverick": (400.0, 17.0),
    "llama4-scout": (109.0, 17.0),
}


@pytest.mark.parametrize("mid", sorted(PUBLISHED))
def test_catalog_moe_counts_reproduce_published_totals_and_active(mid):
    m = CAT.model(mid)
    total, active = PUBLISHED[mid]
    assert m.is_moe
    assert m.params / 1e9 == pytest.approx(total, rel=0.02)
    assert m.active_params / 1e9 == pytest.approx(active, rel=0.02)
    assert m.active_params < m.params


def test_mla_block_by_hand():
    # DeepSeek-V3: h 7168, a 128, r_q 1536, r_kv 512, d_n 128, d_r 64, d_v 128
    q = 7168 * 1536 + 1536 + 1536 * 128 * (128 + 64)      # W^DQ, its norm, W^UQ (+ W^QR)
    kv = 7168 * (512 + 64) + 512 + 512 * 128 * (128 + 128)  # W^DKV + W^KR, norm, W^UK + W^UV
    o = 128 * 128 * 7168
    assert q + kv + o == 187_107_328
    assert moe.mla_attention_params(7168, 128, 1536, 512, 128, 64, 128) == q + kv + o


def test_moe_ffn_by_hand():
    # Mixtral 8x7B: router 4096 x 8; eight SwiGLU experts of 3 x 4096 x 14336; top-2
    expert = 3 * 4096 * 14336
    total, active = moe.moe_ffn_params(4096, 8, 2, 14336)
    assert total == 4096 * 8 + 8 * expert and active == 4096 * 8 + 2 * expert
    # gpt-oss: fused gate/up bias 2 f_e, down bias h, router bias E
    t, a = moe.moe_ffn_params(2880, 128, 4, 2880, expert_biases=True, router_bias=True)
    e = 3 * 2880 * 2880 + 2 * 2880 + 2880
    assert t == 2880 * 128 + 128 + 128 * e and a == 2880 * 128 + 128 + 4 * e


def test_deepseek_v3_total_by_hand():
    m = CAT.model("deepseek-v3")
    h, V = 7168, 129280
    attn = 187_107_328 + 2 * h                     # MLA + two RMSNorms per layer
    dense_ffn = 3 * h * 18432                      # first three layers
    router = h * 256 + 256                         # with the balancing bias
    moe_ffn = router + 256 * 3 * h * 2048 + 3 * h * 2048   # routed + one shared
    total = 61 * attn + 3 * dense_ffn + 58 * moe_ffn + h + 2 * V * h
    assert m.params == total
    active = 61 * attn + 3 * dense_ffn + 58 * (router + 8 * 3 * h * 2048 + 3 * h * 2048) \
        + h + 2 * V * h
    assert m.active_params == active
    # the MTP module: one MoE layer, the 2h -> h projection and three norms (11.6B); the
    # report's 14B counts the shared embedding and head again (2 x 0.93B)
    assert m.mtp_params == attn + moe_ffn + 2 * h * h + 3 * h
    assert (m.mtp_params + 2 * V * h) / 1e9 == pytest.approx(14.0, rel=0.05)


def test_moe_layer_count():
    assert moe.moe_layer_count(61, 3, 1) == 58          # DeepSeek-V3
    assert moe.moe_layer_count(48, 0, 2) == 24          # Llama 4 Maverick
    assert moe.moe_layer_count(48, 0, 1) == 48
    with pytest.raises(InputError) as e:
        moe.moe_layer_count(4, 5)
    assert e.value.param == "moe_dense_layers"


def test_dense_models_unchanged():
    for mid in ("llama3-70b", "gpt3-175b", "llama2-7b"):
        m = CAT.model(mid)
        assert m.active_params == m.params and m.moe_layers == 0 and m.expert_params == 0
        assert m.flops_per_token() == pytest.approx(float(fl.flops_per_token(fl.ModelShape(
            m.layers, m.hidden, m.heads, m.vocab, kv_heads=m.kv_heads, ffn_hidden=m.ffn_hidden,
            gated_ffn=m.gated_ffn, head_dim=m.head_dim), m.seq_len)), rel=1e-12)


def test_one_expert_top1_is_the_dense_model_plus_its_router():
    d = CAT.model("llama3-8b")
    m = d.with_(moe_experts=1, moe_top_k=1, moe_ffn_hidden=d.ffn_hidden)
    assert m.params == d.params + d.layers * d.hidden
    # the router is a matmul: 6 FLOPs per weight per token
    assert m.flops_per_token() == pytest.approx(d.flops_per_token() + 6 * d.layers * d.hidden,
                                                rel=1e-12)


def test_flops_from_active_parameters():
    m = CAT.model("deepseek-v3")
    s = 4096
    # per layer: MLA matmuls (latent norms are not matmuls), dense FFN on 3 layers,
    # router + 8 routed + 1 shared expert on 58
    mla_mm = 187_107_328 - 1536 - 512
    per_layer = mla_mm + (3 * 3 * 7168 * 18432 + 58 * (7168 * 256 + 9 * 3 * 7168 * 2048)) / 61
    attn = 6 * 61 * s * 128 * ((128 + 64) + 128)      # scores with d_qk = 192, values 128
    expected = 6 * 61 * per_layer + 6 * 129280 * 7168 + attn
    assert m.flops_per_token() == pytest.approx(expected, rel=1e-12)
    # 6 N_active is within 2% of the matmul part (N_active counts the input embedding)
    assert 6 * 61 * per_layer + 6 * 129280 * 7168 == pytest.approx(6 * m.active_params,
                                                                     rel=0.03)


def test_cli_flops_deepseek_v3(capsys):
    # done when
    assert main(["flops", "--model", "deepseek-v3", "--tokens", "14.8e12", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["params"] == pytest.approx(671e9, rel=0.01)
    assert r["active_params"] == pytest.approx(37e9, rel=0.02)
    six_n_d = 6 * 37e9 * 14.8e12
    attn = 6 * 61 * 4096 * 128 * 320 * 14.8e12
    assert r["total_flops"] == pytest.approx(six_n_d + attn, rel=0.03)
    assert r["flops_per_token_by_method"]["6n"] == pytest.approx(6 * r["active_params"])
    assert r["mtp_params"] == pytest.approx(11.6e9, rel=0.01)


def test_sliding_window_layers_score_fewer_keys():
    m = CAT.model("gpt-oss-120b")
    full = m.with_(attention_window=0, window_layers=0)
    s, a, d = m.seq_len, m.heads, m.head_dim
    # 18 of 36 layers score 128 keys instead of s
    saved = 18 * 6 * (s - 128) * a * 2 * d
    assert full.flops_per_token() - m.flops_per_token() == pytest.approx(saved, rel=1e-12)


@pytest.mark.parametrize("bad,param", [(dict(moe_experts=8, moe_top_k=9), "moe_top_k"),
                                       (dict(moe_experts=8, moe_top_k=0), "moe_top_k"),
                                       (dict(attention="sparse"), "attention"),
                                       (dict(moe_top_k=2), "moe_top_k")])
def test_bad_moe_fields_name_the_parameter(bad, param):
    with pytest.raises(InputError) as e:
        ModelSpec(layers=4, hidden=64, heads=4, vocab=100, seq_len=32, **bad)
    assert e.value.param == param

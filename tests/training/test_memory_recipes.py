"""Memory of 2025 training recipes: named-module recomputation, FP8 activation caching, BF16
optimizer moments, and DeepSeek-V3's published layout (arXiv:2412.19437 §3.2-3.3, §4.2:
2,048 H800, TP1 PP16 EP64, ZeRO-1, micro-batch 1, 15,360 x 4,096 tokens) in 80 GB."""

import json
from dataclasses import replace

import numpy as np
import pytest

from llmcost import catalog
from llmcost._validate import InputError
from llmcost.cli import main
from llmcost.training import memory as mem
from llmcost.training.arch import ModelSpec
from llmcost.training.hardware import Hardware
from llmcost.training.layout import Layout
from llmcost.training.memory import MemoryOptions
from llmcost.training.precision import fp8_activation_saving_bytes_per_layer
from llmcost.training.recompute import RECOMPUTE_MODULES, check_recompute_modules, recompute_flops_per_token
from llmcost.training.step import Options, predict_step

CAT = catalog.default()
DSV3 = CAT.model("deepseek-v3")
H800 = CAT.gpu("h800")
GIB = 2 ** 30

# DeepSeek-V3 (arXiv:2412.19437 §4.2): h 7168, 128 heads, r_q 1536, r_kv 512, d_n 128,
# d_r 64, d_v 128; 256 routed experts of 2048, top-8, one shared expert of 2048
H, A, RQ, RKV, DN, DR, DV = 7168, 128, 1536, 512, 128, 64, 128
E, K, FE, FS = 256, 8, 2048, 2048
S = 4096
# DeepSeek-V3 carries these shapes (MLA attention, MoE FFN, no dropout, gated FFN)
MLA = MOE = (DSV3, S, 1)
LayerOptions = mem.LayerOptions
# a Llama 3 70B layer (h 8192, 64 heads, 8 KV heads, f 28672, gated, no dropout)
L70_LAYER = ModelSpec(layers=80, hidden=8192, heads=64, vocab=128256, seq_len=8192, kv_heads=8,
                      ffn_hidden=28672, gated_ffn=True, head_dim=128, dropout=False)

#: DeepSeek-V3's recipe, as Megatron-Core 2025 names it
RECIPE_MODULES = ("layernorm", "mla_up_proj")
#: DeepSeek-V3's recipe: BF16 moments (a layout field) and the memory options; balanced
#: routing (capacity factor 1)
RECIPE_MOMENTS = dict(optimizer_moments="bf16")
RECIPE = MemoryOptions(activation_precision="fp8", moe_probs_at="activation", moe_capacity_factor=1.0)
BALANCED = MemoryOptions(moe_capacity_factor=1.0)
LAYOUT = dict(gpus=2048, tp=1, pp=16, ep=64, micro_batch=1, global_batch=15360, zero_stage=1,
              precision="fp8")


# ------------------------------------------------------------------ optimizer moments

def test_bf16_moments_give_twelve_bytes_per_parameter():
    # mixed-precision Adam: BF16 weights 2 + grads 2 + FP32 master 4 + moments 4 + 4 = 16;
    # moments in BF16: 2 + 2 + 4 + 2 + 2 = 12. (DeepSeek-V3 §3.3.3 also keeps its gradients
    # in FP32 for accumulation: 2 + 4 + 4 + 2 + 2 = 14 with its own gradient bytes.)
    assert sum(mem.model_state_bytes(1.0)) == 16
    w, g, o = mem.model_state_bytes(1.0, optimizer_moments="bf16")
    assert (w, g, o) == (2, 2, 8) and w + g + o == 12
    # ZeRO-1 over 128 ranks shards only the 4 + 2 + 2
    assert mem.model_state_bytes(1e9, 128, 1, optimizer_moments="bf16")[2] == 8e9 / 128
    # SGD with momentum: master 4 + momentum 4 -> 4 + 2
    assert mem.model_state_bytes(1.0, optimizer="sgd", optimizer_moments="bf16")[2] == 6
    with pytest.raises(InputError) as e:
        mem.model_state_bytes(1.0, optimizer="adam-8bit", optimizer_moments="bf16")
    assert e.value.param == "optimizer_moments" and "'fp32'" in str(e.value)
    with pytest.raises(InputError) as e:
        mem.model_state_bytes(1.0, optimizer_moments="fp8")
    assert e.value.param == "optimizer_moments"


# ------------------------------------------------------------------ module by module

def test_mla_block_and_its_up_projection_by_hand():
    # BF16, t = 1, flash: norm input 2h + norm output 2h + latents 2 (r_q + r_kv + d_r)
    # + normed latents 2 (r_q + r_kv) + Q, K 2 a (d_n + d_r) each + V 2 a d_v
    # + attention output 2 a d_v
    per_token = (2 * H + 2 * H + 2 * (RQ + RKV + DR) + 2 * (RQ + RKV)
                 + 2 * A * (DN + DR) * 2 + 2 * A * DV + 2 * A * DV)
    assert per_token == 200_832
    assert mem.mla_attention_activation_bytes(*MLA) == S * per_token
    # mla_up_proj frees the normed latents and Q, K, V: 2 x 2048 + 2 x 128 x 512 = 135,168
    # bytes per token, 554 MB per layer of 4,096 tokens
    freed = mem.mla_attention_activation_bytes(*MLA) - mem.mla_attention_activation_bytes(
        *MLA, options=LayerOptions(recompute_modules=("mla_up_proj",)))
    assert freed == S * (2 * (RQ + RKV) + 2 * A * (2 * (DN + DR) + DV)) == 553_648_128
    # TP 4 with SP: the heads split over t, the latents over the sequence shard; FP8 cache:
    # the normed latents at 1 byte
    kw = dict(sequence_parallel=True, linear_input_bytes=1.0)
    freed = (mem.mla_attention_activation_bytes(*MLA, tp=4, options=LayerOptions(**kw))
             - mem.mla_attention_activation_bytes(*MLA, tp=4, options=LayerOptions(
                 recompute_modules="mla_up_proj", **kw)))
    assert freed == pytest.approx(S * ((RQ + RKV) / 4 + 2 * A * (2 * (DN + DR) + DV) / 4))
    # full recomputation keeps the layer input, named modules or not
    full = mem.mla_attention_activation_bytes(*MLA, options=LayerOptions(
        "full", recompute_modules=("mla_up_proj",)))
    assert full == S * 2 * H


def _freed_on_dense_layer(modules, q):
    """Bytes that recomputing ``modules`` frees on a Llama 3 70B layer (h 8192, 64 heads, 8 KV
    heads, f 28672, gated) at TP 8 + SP, 8,192 tokens, q bytes per cached input."""
    args = (L70_LAYER, 8192, 1, 8, 1)
    kw = dict(flash_attention=False, sequence_parallel=True, linear_input_bytes=q)
    return (mem.activation_bytes_per_layer(*args, LayerOptions(**kw))
            - mem.activation_bytes_per_layer(*args, LayerOptions(recompute_modules=modules, **kw)))


def test_layernorm_frees_the_norm_outputs():
    # dense GQA layer: the two norm outputs, q bytes x h / t each
    for q in (2.0, 1.0):
        assert _freed_on_dense_layer(("layernorm",), q) == pytest.approx(8192 * 2 * q * 8192 / 8)
    # MLA: the one norm output the down-projections read, q h / t^SP
    freed = mem.mla_attention_activation_bytes(*MLA) - mem.mla_attention_activation_bytes(
        *MLA, options=LayerOptions(recompute_modules=("layernorm",)))
    assert freed == S * 2 * H


def test_mlp_and_core_attn_on_a_dense_layer():
    # mlp: the fc1 output (gate and up, 2 x 2f) and the fc2 input (q f), over t
    for q in (2.0, 1.0):
        assert _freed_on_dense_layer("mlp", q) == pytest.approx(8192 * (4 + q) * 28672 / 8)
    # core_attn is selective recomputation: unfused attention without dropout frees the
    # softmax output, 2 a s / t per token
    small = ModelSpec(layers=1, hidden=2048, heads=16, vocab=32000, seq_len=2048, dropout=False)
    unfused = LayerOptions("none", flash_attention=False)
    core = LayerOptions("none", ("core_attn",), flash_attention=False)
    freed = (mem.activation_bytes_per_layer(small, options=unfused)
             - mem.activation_bytes_per_layer(small, options=core))
    assert freed == 2048 * 2 * 16 * 2048
    assert mem.activation_bytes_per_layer(small, options=core) == \
        mem.activation_bytes_per_layer(small, options=LayerOptions("selective",
                                                                   flash_attention=False))
    # with flash attention there are no scores to free
    assert mem.activation_bytes_per_layer(small, options=LayerOptions(
        recompute_modules=("core_attn",))) == mem.activation_bytes_per_layer(small)


def test_moe_modules_by_hand():
    # per token on the SP shard (t = 1): router probs 4E; per copy fc1 input q h, fc1 output
    # 2 x 2 f_e, fc2 input q f_e, expert output 2h (probs at the combine); shared experts
    # (4 + q) f_s
    per_copy = 2 * H + 4 * FE + 2 * FE + 2 * H
    base = mem.moe_ffn_activation_bytes(*MOE)
    assert base == S * (4 * E + K * per_copy + 6 * FS)
    # moe_act: the fc2 inputs of the k copies
    assert base - mem.moe_ffn_activation_bytes(*MOE, options=LayerOptions(
        recompute_modules=("moe_act",))) == \
        S * K * 2 * FE
    # shared_experts: their fc1 output and fc2 input
    assert base - mem.moe_ffn_activation_bytes(*MOE, options=LayerOptions(
        recompute_modules=("shared_experts",))) == \
        S * 6 * FS
    # moe: the whole block (its input, the norm output, is counted with the dense FFN's part)
    assert mem.moe_ffn_activation_bytes(*MOE, options=LayerOptions(
        recompute_modules=("moe", "shared_experts"))) == 0
    # probabilities in the activation: each copy keeps a 4-byte probability instead of its
    # 2h output
    act = mem.moe_ffn_activation_bytes(*MOE, options=LayerOptions(moe_probs_at="activation"))
    assert base - act == S * K * (2 * H - 4)
    # capacity factor 1.25: the busiest rank holds 1.25 x the copies
    hot = mem.moe_ffn_activation_bytes(*MOE, options=LayerOptions(moe_capacity_factor=1.25,
                                                                  moe_probs_at="activation"))
    assert hot - act == pytest.approx(0.25 * S * K * (2 * H + 6 * FE + 4))
    with pytest.raises(InputError) as e:
        mem.moe_ffn_activation_bytes(*MOE, options=LayerOptions(moe_probs_at="router"))
    assert e.value.param == "moe_probs_at"
    # the block needs a model with experts; a dense model is named
    with pytest.raises(InputError) as e:
        mem.moe_ffn_activation_bytes(L70_LAYER)
    assert e.value.param == "model"


def test_fp8_moe_block_keeps_the_routers_bf16_input():
    # q = 1: per copy fc1 input h and fc2 input f_e; shared fc2 input f_s; and the pre-FFN
    # norm output, counted q h with the dense FFN's part, is also kept by the router in BF16:
    # 2h + q h (shared fc1's copy) - q h
    q1 = dict(linear_input_bytes=1.0, sequence_parallel=True)
    fp8 = mem.moe_ffn_activation_bytes(*MOE, options=LayerOptions(**q1))
    per_copy = H + 4 * FE + FE + 2 * H
    assert fp8 == S * (4 * E + K * per_copy + 5 * FS + 2 * H)
    # layernorm recomputation frees the router's copy too
    assert fp8 - mem.moe_ffn_activation_bytes(*MOE, options=LayerOptions(
        recompute_modules=("layernorm",), **q1)) == S * 2 * H
    # the whole block recomputed: its checkpoint keeps the BF16 input, 2h, in place of q h
    assert mem.moe_ffn_activation_bytes(*MOE, options=LayerOptions(
        recompute_modules=("moe",), **q1)) == S * (2 * H - H)


# ------------------------------------------------------------------ FP8 caching, counted once

def test_fp8_caching_of_a_dense_layer_is_the_precision_models_saving_once():
    # Llama 3 8B, TP 2 + SP, flash: caching linear inputs in FP8 saves exactly what
    # precision.fp8_activation_saving_bytes_per_layer counts (norm outputs, FFN-down input,
    # minus the projection's copy beside flash attention's BF16 output), and memory_per_gpu
    # subtracts it once
    m = CAT.model("llama3-8b")
    bf, f8 = (mem.activation_bytes_per_layer(m, 8192, 1, 2, 1, LayerOptions(
        sequence_parallel=True, linear_input_bytes=q)) for q in (2.0, 1.0))
    assert bf - f8 == pytest.approx(fp8_activation_saving_bytes_per_layer(
        m, 8192, 1, 2, 1, LayerOptions(sequence_parallel=True, precision="fp8")), rel=1e-12)
    lay = dict(gpus=16, tp=2, pp=1, zero_stage=1, sequence_parallel=True, global_batch=None)
    default, explicit, kept = (mem.memory_per_gpu(m, Layout(**lay, precision="fp8"),
                                                  MemoryOptions(activation_precision=a), seq_len=8192)
                               for a in (None, "fp8", "bf16"))
    assert float(default.activations_bytes) == float(explicit.activations_bytes)
    assert float(kept.activations_bytes) == pytest.approx(float(mem.memory_per_gpu(
        m, Layout(**lay, precision="bf16"), seq_len=8192).activations_bytes), rel=1e-12)
    assert float(kept.activations_bytes - default.activations_bytes) == pytest.approx(
        32 * (bf - f8), rel=1e-12)
    with pytest.raises(InputError) as e:
        mem.memory_per_gpu(m, Layout(**lay, precision="bf16"), MemoryOptions(activation_precision="fp8"),
                           seq_len=8192)
    assert e.value.param == "activation_precision"


def test_fp8_caching_of_deepseek_v3_layers_by_hand():
    # per token, t = 1, flash, q = 1. Dense layer (f 18432): attention norm output h, normed
    # latents r_q + r_kv, minus the projection's copy a d_v, FFN norm output h, FFN-down
    # input f = 18,432. MoE layer: the same attention part; the FFN input now kept twice
    # (router BF16 2h and shared fc1's h, against 2h: -h); per copy fc1 input h and fc2 input
    # f_e; shared fc2 input f_s = 61,440
    attn = H + (RQ + RKV) - A * DV
    dense = attn + H + 18432
    moe = attn - H + K * (H + FE) + FS
    assert (dense, moe) == (18_432, 61_440)
    bf, f8 = (mem.layer_activation_bytes(DSV3, S, options=LayerOptions(linear_input_bytes=q))
              for q in (2.0, 1.0))
    assert bf - f8 == pytest.approx(S * (3 * dense + 58 * moe) / 61, rel=1e-12)


# ------------------------------------------------------------------ DeepSeek-V3 in 80 GB

def test_h800_capacity_is_80_gib():
    # the catalog stores the HBM's binary size: 80 GiB = 85.9e9 bytes
    assert H800.memory_bytes == 80 * GIB == 85_899_345_920


def test_deepseek_v3_published_layout_fits_only_with_its_recipe():
    """TP1 PP16 EP64 ZeRO-1 on 2,048 H800, 61 layers split 3/4/2: the peak is the second
    stage, 4 layers x 15 micro-batches in flight. Balanced routing (auxiliary-loss-free,
    §2.1.2: capacity factor 1)."""
    plain = mem.memory_per_gpu(DSV3, Layout(**LAYOUT), BALANCED, seq_len=S)
    recipe = mem.memory_per_gpu(DSV3, Layout(**LAYOUT, **RECIPE_MOMENTS, recompute_modules=RECIPE_MODULES),
                                RECIPE, seq_len=S)
    assert float(plain.total_bytes) > 1.5 * H800.memory_bytes
    assert float(recipe.total_bytes) < H800.memory_bytes
    assert (int(recipe.peak_stage), int(recipe.peak_stage_layers)) == (1, 4)
    # with the probabilities at the combine, each MoE layer keeps its 8 expert outputs of
    # 2h: 58/61 x 4,096 x 8 x (2 x 7168 - 4) bytes per layer, x 60 layer-micro-batches, plus
    # 2% fragmentation; too much for 80 GiB
    combine = mem.memory_per_gpu(DSV3, Layout(**LAYOUT, **RECIPE_MOMENTS, recompute_modules=RECIPE_MODULES),
                                 replace(RECIPE, moe_probs_at="combine"), seq_len=S)
    extra = 58 / 61 * S * K * (2 * H - 4) * 60
    assert float(combine.activations_bytes - recipe.activations_bytes) == pytest.approx(extra)
    assert float(combine.total_bytes - recipe.total_bytes) == pytest.approx(extra * 1.02)
    assert float(combine.total_bytes) > H800.memory_bytes
    # FP8 caching and BF16 moments without the recomputation do not fit either
    no_rc = mem.memory_per_gpu(DSV3, Layout(**LAYOUT, **RECIPE_MOMENTS), RECIPE, seq_len=S)
    assert float(no_rc.total_bytes) > H800.memory_bytes
    # BF16 moments: 2 of Adam's 12 optimizer bytes become 4 + 2 + 2 = 8, sharded by ZeRO-1
    plain_bf16 = mem.memory_per_gpu(DSV3, Layout(**LAYOUT, optimizer_moments="bf16"), BALANCED, seq_len=S)
    assert float(plain_bf16.optimizer_bytes) == pytest.approx(
        float(plain.optimizer_bytes) * 8 / 12, rel=1e-12)


def test_deepseek_v3_recipe_through_predict_step():
    up, out = CAT.fabric(H800.scale_up), CAT.fabric("ib-ndr")
    opts = Options(flash_attention=True, moe_load_imbalance=1.0, moe_a2a_overlap=0.95)
    kw = dict(seq_len=S, with_scaling=False, options=opts)
    plain = predict_step(DSV3, Hardware(H800, up, out), Layout(**LAYOUT, flash_attention=True), **kw)
    recipe = predict_step(DSV3, Hardware(H800, up, out),
                          Layout(**LAYOUT, **RECIPE_MOMENTS, recompute_modules=RECIPE_MODULES,
                                 flash_attention=True),
                          memory=replace(RECIPE, moe_capacity_factor=None), **kw)
    assert not bool(plain.fits) and bool(recipe.fits)
    assert float(recipe.memory_bytes) == float(mem.memory_per_gpu(
        DSV3, Layout(**LAYOUT, **RECIPE_MOMENTS, recompute_modules=RECIPE_MODULES, flash_attention=True),
        RECIPE, seq_len=S).total_bytes)
    # the up-projections' second forward: 2 (r_q a (d_n + d_r) + r_kv a (d_n + d_v)) per
    # token and layer = 2 (1536 x 128 x 192 + 512 x 128 x 256) = 109,051,904 FLOPs; the
    # norms recompute no matmul. HFU counts them, MFU does not: the model FLOPs per step
    # (MFU x step time) are unchanged, HFU / MFU = 1 + 61 F_rc / model FLOPs per token
    f_rc = 2 * (RQ * A * (DN + DR) + RKV * A * (DN + DV))
    assert f_rc == 109_051_904
    assert recompute_flops_per_token(DSV3, RECIPE_MODULES) == f_rc
    assert float(plain.hfu) == float(plain.mfu)
    assert float(recipe.hfu / recipe.mfu) == pytest.approx(
        1 + 61 * f_rc / DSV3.flops_per_token(seq_len=S), rel=1e-9)
    assert float(recipe.mfu * recipe.step_time_s) == pytest.approx(
        float(plain.mfu * plain.step_time_s), rel=1e-12)
    # recomputation costs time: DeepSeek's "minor overhead" (a few percent here)
    assert 1.0 < float(recipe.step_time_s / plain.step_time_s) < 1.05


def test_recomputed_mlp_raises_hfu_by_its_forward():
    # Llama 3 8B (h 4096, f 14336, gated, 32 layers): the dense FFN's forward is 2 x 3 h f
    # = 352,321,536 FLOPs per token per layer, added to the hardware FLOPs only
    m = CAT.model("llama3-8b")
    g = CAT.gpu("h100-sxm")
    up, out = CAT.fabric(g.scale_up), CAT.fabric("ib-ndr")
    lay = dict(gpus=64, tp=2, pp=1, global_batch=512, zero_stage=1, sequence_parallel=True,
               flash_attention=True)
    kw = dict(seq_len=8192, with_scaling=False, options=Options(flash_attention=True))
    plain = predict_step(m, Hardware(g, up, out), Layout(**lay), **kw)
    rc = predict_step(m, Hardware(g, up, out), Layout(**lay, recompute_modules=("mlp",)), **kw)
    f_rc = 2 * 3 * 4096 * 14336
    assert f_rc == 352_321_536 == recompute_flops_per_token(m, ("mlp",))
    assert float(rc.hfu / rc.mfu) == pytest.approx(
        1 + 32 * f_rc / m.flops_per_token(seq_len=8192), rel=1e-9)
    assert float(rc.step_time_s) > float(plain.step_time_s)
    assert float(rc.memory.activations_bytes) < float(plain.memory.activations_bytes)
    # the attention core by name is recompute="selective", in time, FLOPs and memory
    by_name = predict_step(m, Hardware(g, up, out), Layout(**lay, recompute_modules="core_attn"), **kw)
    sel = predict_step(m, Hardware(g, up, out), Layout(**lay, recompute="selective"), **kw)
    for f in ("step_time_s", "hfu", "mfu", "memory_bytes"):
        assert float(getattr(by_name, f)) == float(getattr(sel, f)), f
    # vectorized: the modules apply to the layouts not fully recomputed
    arr = predict_step(m, Hardware(g, up, out), Layout(**lay, recompute_modules=("mlp",),
                                                       recompute=np.array(["none", "full"])), **kw)
    assert float(arr.hfu[0]) == pytest.approx(float(rc.hfu))
    full = predict_step(m, Hardware(g, up, out), Layout(**lay, recompute="full"), **kw)
    assert float(arr.hfu[1]) == pytest.approx(float(full.hfu))


def test_module_names_are_checked_against_the_model():
    assert check_recompute_modules("mla_up_proj, layernorm", "mla") == ("layernorm", "mla_up_proj")
    assert set(RECOMPUTE_MODULES) >= {"core_attn", "layernorm", "mla_up_proj", "moe_act"}
    m = CAT.model("llama3-8b")
    for bad, word in (("mla_up_proj", "latent"), ("moe_act", "mixture"), ("norm", "layernorm")):
        with pytest.raises(InputError) as e:
            mem.memory_per_gpu(m, Layout(gpus=8, recompute_modules=(bad,), global_batch=None))
        assert e.value.param == "recompute_modules" and word in str(e.value)


# ------------------------------------------------------------------ 61 layers on 16 stages

def test_deepseek_v3_61_layers_on_16_stages_balance_automatically():
    # L' = ceil(61/16) = 4, 64 - 61 = 3 short: one from the first stage (embedding), two from
    # the last (LM head; Megatron-Bridge's recipe puts all three there with the MTP layer:
    # 4, 14 x 4, 1 + MTP): 3 + 14 x 4 + 2 = 61
    assert [int(x) for x in mem.pipeline_stage_layers(61, 16)] == [3, 4, 2]
    # interleaving beyond Megatron's embedding/loss slots: every stage divisible by v
    with pytest.raises(InputError) as e:
        mem.pipeline_stage_layers(61, 16, interleave=2)
    assert e.value.param == "interleave"


def test_cli_predicts_deepseek_v3_published_layout(capsys):
    code = main(["predict", "--model", "deepseek-v3", "--gpu", "h800", "--gpus", "2048",
                 "--tp", "1", "--pp", "16", "--ep", "64", "--global-batch", "15360",
                 "--micro-batch", "1", "--seq-len", "4096", "--precision", "fp8", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert code in (0, None)
    assert r["layout"]["stage_layers"] == {"first": 3, "middle": 4, "middle_stages": 14,
                                           "last": 2}


# ------------------------------------------------------------------ torchtitan's per-op SAC

L8 = CAT.model("llama3-8b")   # h 4096, 32 heads of 128, 8 KV heads, f 14336 gated


def test_op_sac_saves_every_other_matmul_in_forward_order():
    # torchtitan's policy counts aten.mm per block and saves the odd ones: wq, wk, wv, wo,
    # w1, w3, w2 -> saved wq, wv, w1, w2; a plain FFN fc1, fc2 -> saved wq, wv, fc1
    from llmcost.training.recompute import op_sac_matmuls
    assert [n for n, saved in op_sac_matmuls(True) if saved] == ["q", "v", "gate", "down"]
    assert [n for n, saved in op_sac_matmuls(False) if not saved] == ["k", "o", "fc2"]


def test_op_sac_recomputes_k_o_and_up_by_hand():
    # one more forward of wk (4096 x 1024), wo (4096 x 4096) and w3 (4096 x 14336):
    # 2 (4,194,304 + 16,777,216 + 58,720,256) = 159,383,552 FLOPs per token and layer,
    # 36.5% of the layer's 2 P_mm = 436,207,616 forward FLOPs
    assert recompute_flops_per_token(L8, ("op_sac",), 8192) == 159_383_552
    assert 159_383_552 / (2 * 218_103_808) == pytest.approx(0.3654, abs=1e-4)


def test_op_sac_memory_by_hand():
    # per token and layer, BF16: the block input 2h (8,192), Q 2 d_q (8,192), V 2 d_kv
    # (2,048), the flash output 2 d_q and its FP32 log-sum-exp per head 4a (8,320), the gate
    # 2f (28,672), the down projection's output 2h (8,192): 63,616 bytes, against 139,264
    # without recomputation
    kw = dict(seq_len=8192, micro_batch=1)
    op = mem.layer_activation_bytes(L8, options=LayerOptions(recompute_modules=("op_sac",)), **kw)
    assert op / 8192 == 8192 + 8192 + 2048 + 8320 + 28672 + 8192 == 63_616
    assert mem.layer_activation_bytes(L8, **kw) / 8192 == 139_264
    # TP 2 with sequence parallelism: the input and both reduce-scatter outputs are h/t,
    # K/V heads split over t, the rest over t; the down projection's mm output is still h
    tp = mem.layer_activation_bytes(L8, tp=2, options=LayerOptions(
        recompute_modules="op_sac", sequence_parallel=True), **kw)
    assert tp / 8192 == 4096 + 4096 + 1024 + 4160 + 14336 + 8192 + 8192 == 44_096
    # full recomputation overrides it (the layer's input only)
    full = mem.layer_activation_bytes(L8, seq_len=8192, options=LayerOptions(
        "full", recompute_modules=("op_sac",)))
    assert full / 8192 == 8192


def test_op_sac_is_a_dense_layer_policy_named_alone():
    check_recompute_modules("op_sac")
    for model in (CAT.model("mixtral-8x7b"), DSV3):
        with pytest.raises(InputError) as e:
            check_recompute_modules("op_sac", model.attention, model.is_moe,
                                    model.moe_shared_ffn_hidden > 0)
        assert e.value.param == "recompute_modules" and "dense" in str(e.value)
    with pytest.raises(InputError) as e:
        check_recompute_modules("op_sac,layernorm")
    assert e.value.param == "recompute_modules" and "named alone" in str(e.value)
    assert "op_sac" in RECOMPUTE_MODULES


def test_op_sac_costs_its_forward_in_hfu_not_mfu():
    # same layout, none vs op_sac: MFU's FLOPs are the model's, HFU adds 159,383,552 per
    # token and layer (x 32 layers), and the step is slower by about that share of the linears
    gpu, nvl, ib = CAT.gpu("h100-sxm"), CAT.fabric("nvlink4"), CAT.fabric("ib-ndr")
    lay = dict(gpus=8, tp=1, pp=1, global_batch=16, micro_batch=2, zero_stage=3, recompute="none",
               flash_attention=False)
    kw = dict(seq_len=8192, with_scaling=False, options=Options(stack="fsdp"))
    a = predict_step(L8, Hardware(gpu, nvl, ib), Layout(**lay), **kw)
    b = predict_step(L8, Hardware(gpu, nvl, ib), Layout(**lay, recompute_modules=("op_sac",)), **kw)
    tokens = 16 * 8192
    extra = float(b.hardware_tflops_per_gpu) * float(b.step_time_s) \
        - float(a.hardware_tflops_per_gpu) * float(a.step_time_s)
    assert extra * 1e12 == pytest.approx(32 * 159_383_552 * tokens / 8, rel=1e-6)
    assert 1.04 < float(b.step_time_s) / float(a.step_time_s) < 1.15
    assert float(b.memory_bytes) < float(a.memory_bytes) - 30e9

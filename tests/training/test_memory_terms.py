"""memory_per_gpu's terms one by one (ZeRO, Korthikanti et al., QLoRA, Transformer Engine's
FP8 copies), their sum at the peak stage, and the one list of terms the CLI and plots read."""

import numpy as np
import pytest

from llmcost import InputError, catalog
from llmcost.training import memory as mem
from llmcost.training.layout import Layout
from llmcost.training.memory import MemoryOptions
from llmcost.training.memory import StageLayout as SL

GB = 1e9


@pytest.fixture(scope="module")
def llama70():
    # 80 layers, h 8192, 64 heads / 8 KV heads, f 28672 gated, V 128256, untied, RMSNorm
    return catalog.model("llama3-70b")


# ------------------------------------------------------------------ parameters per stage

def test_stages_hold_the_model_once_untied(llama70):
    # Llama 3 70B, PP 4 (20 layers each): the stages together hold the 70,553,706,496
    # parameters of the model card's count once (the embedding first, head and norm last)
    p = {s: mem.stage_parameters(llama70, 20, 4, s) for s in mem.STAGES}
    assert p["first"] + 2 * p["middle"] + p["last"] == 70_553_706_496
    assert p["middle"] == 20 * 855_654_400
    one = [mem.stage_parameters(llama70, 80, 1, s) for s in ("first", "last")]
    assert one == [70_553_706_496, 70_553_706_496]


def test_tied_head_copied_on_the_last_stage():
    # GPT-3 175B ties the LM head to the token embedding (50,257 x 12,288 = 617,558,016).
    # One stage holds it once; a pipeline's last stage keeps its own copy (Megatron)
    m = catalog.model("gpt3-175b")
    assert mem.stage_parameters(m, 96, 1, "first") == m.params
    stages = [mem.stage_parameters(m, 12, 8, s) for s in mem.STAGES]
    assert stages[0] + 6 * stages[1] + stages[2] == m.params + 50_257 * 12_288


# ------------------------------------------------------------------ weights, grads, optimizer

def test_dense_stage_states_are_zero_of_the_stage_over_tp(llama70):
    # first stage of TP 8 PP 4 on 64 GPUs: d = 2, ZeRO-1 shards only the 12 optimizer bytes
    p = mem.stage_parameters(llama70, 20, 4, "first")
    w, g, o, ew = mem.stage_model_state_bytes(llama70, p, 20, SL(tp=8, zero_group=2, zero_stage=1))
    assert w == pytest.approx(2 * p / 8, rel=1e-12) and g == pytest.approx(2 * p / 8, rel=1e-12)
    assert o == pytest.approx(12 * p / 16, rel=1e-12) and ew == 0.0


def test_moe_experts_sharded_by_ep_and_expert_dp():
    # Mixtral 8x7B: 8 experts x 3 x 4096 x 14336 = 1,409,286,144 expert parameters per layer.
    # 16 GPUs, TP 1 PP 1, EP 8: each GPU holds 32 layers' experts / 8 at 2 bytes; the expert
    # optimizer (12 bytes, ZeRO-1) shards over gpus / (p e t_e) = 2, the rest over d = 16
    m = catalog.model("mixtral-8x7b")
    experts = 32 * 8 * 3 * 4096 * 14336
    p = mem.stage_parameters(m, 32, 1, "first")
    w, g, o, ew = mem.stage_model_state_bytes(m, p, 32, SL(tp=1, zero_group=16, ep=8, etp=1,
                                                        expert_zero_group=2, zero_stage=1))
    assert ew == pytest.approx(2 * experts / 8, rel=1e-12)
    assert ew / GB == pytest.approx(11.274, abs=1e-3)
    assert w == pytest.approx(2 * (p - experts) + ew, rel=1e-12)
    assert o == pytest.approx(12 * (p - experts) / 16 + 12 * experts / 8 / 2, rel=1e-12)


def test_qlora_single_gpu_frozen_nf4_blocks_and_16bit_embeddings():
    # Llama 2 7B QLoRA on one GPU (Dettmers et al. 2023 §3): 32 blocks of 202,383,360
    # parameters in NF4 with double quantization, (4 + 0.127) / 8 bytes each; embeddings, head
    # and final norm (2 x 131,072,000 + 4,096) in 16 bits. LoRA r = 16 on all linears adds
    # 16 x (8192 + 16384 + 8192 + 3 x 15104) = 1,249,280 per layer, 39,976,960 in all, with
    # 2 + 2 + 12 bytes (weights, grads, Adam states)
    m = catalog.model("llama2-7b")
    p = mem.stage_parameters(m, 32, 1, "first")
    w, g, o = mem.stage_adapter_state_bytes(m, p, 32, SL(),
                                            MemoryOptions(finetune="qlora", lora_rank=16))
    adapters = 32 * 1_249_280
    frozen = 4.127 / 8 * 32 * 202_383_360 + 2 * (2 * 131_072_000 + 4096)
    assert w == pytest.approx(2 * adapters + frozen, rel=1e-12)
    assert (g, o) == (pytest.approx(2 * adapters), pytest.approx(12 * adapters))
    assert w / GB == pytest.approx(3.945, abs=1e-3)
    # all NF4: the 16-bit parts shrink to 4.127 bits too
    w4, _, _ = mem.stage_adapter_state_bytes(m, p, 32, SL(), MemoryOptions(
        finetune="qlora", qlora_16bit_embeddings=False))
    assert w4 == pytest.approx(2 * adapters + 4.127 / 8 * p, rel=1e-12)


# ------------------------------------------------------------------ ZeRO-3 and FP8 copies

def test_zero3_working_set_of_a_146b_gpt_layer():
    # Megatron GPT 145.6B: one layer 12 h^2 + 13 h = 1,812,099,072 (h 12288). ZeRO-3 gathers
    # it and prefetches the next (2 x 2 bytes) and holds its unsharded gradients (2):
    # 6 x 1.812e9 = 10.87 GB; frozen LoRA weights have no gradients: 4 x; stage 2: nothing
    m = catalog.model("megatron-gpt-145.6b")
    z3 = mem.stage_zero3_working_bytes(m, 10, SL(tp=1, zero_group=8, zero_stage=3))
    assert z3 == pytest.approx(6 * 1_812_099_072) and z3 / GB == pytest.approx(10.87, abs=0.01)
    lora = mem.stage_zero3_working_bytes(m, 10, SL(tp=1, zero_group=8, zero_stage=3),
                                         MemoryOptions(finetune="lora"))
    assert lora == pytest.approx(4 * 1_812_099_072)
    np.testing.assert_array_equal(
        mem.stage_zero3_working_bytes(m, np.array([10, 0]),
                                      SL(zero_group=8, zero_stage=np.array([[2], [3]]))),
        [[0.0, 0.0], [z3, 0.0]])


def test_fp8_weight_copies_one_layer_under_zero3(llama70):
    # Llama 3 70B GEMMs per layer: 8192 x (8192 + 2 x 1024) + 8192^2 + 3 x 8192 x 28672 =
    # 855,638,016; TP 8, 20 layers, Hopper keeps a row-wise and a transposed FP8 copy
    # (2 bytes): 4.278 GB (as test_precision_step's predict_step figure). ZeRO-3 quantizes
    # the gathered layer only: 1/20 of it. BF16 keeps none
    kw = dict(precision="fp8", generation="hopper")
    w8 = mem.stage_fp8_weight_bytes(llama70, 20, SL(tp=8), **kw)
    assert w8 == pytest.approx(20 * 855_638_016 / 8 * 2, rel=1e-12)
    assert mem.stage_fp8_weight_bytes(llama70, 20, SL(tp=8, zero_stage=3), **kw) == pytest.approx(w8 / 20)
    assert mem.stage_fp8_weight_bytes(llama70, 20, SL(tp=8), precision="bf16") == 0.0


# ------------------------------------------------------------------ activations

def test_cached_linear_input_bytes():
    # BF16 2 bytes; FP8 1; MXFP8 1 + 1/32 (an 8-bit scale per 32 elements)
    q = mem.cached_linear_input_bytes(np.array(["bf16", "fp8", "mxfp8"]))
    np.testing.assert_allclose(q, [2.0, 1.0, 1.03125])
    assert mem.cached_linear_input_bytes("fp8", "bf16") == 2.0
    with pytest.raises(InputError) as e:
        mem.cached_linear_input_bytes("bf16", "fp8")
    assert e.value.param == "activation_precision"


def test_last_stage_adds_fp32_logits_first_the_embedding_mask(llama70):
    # Korthikanti et al. §4.3: the loss keeps 4 s b V / t bytes of FP32 logits on the last
    # stage: Llama 3 70B, s 8192, TP 8: 4 x 8192 x 128256 / 8 = 525,336,576
    lay = SL(seq_len=8192, micro_batch=1, tp=8, pp=4)
    base = mem.stage_activation_bytes(llama70, 1e8, 20, lay, stage="middle")
    assert base == pytest.approx(1e8 * 3 * 20)    # 1F1B: stage 1 of 4 holds 3 micro-batches
    last = mem.stage_activation_bytes(llama70, 1e8, 20, lay, stage="last")
    assert last - 1e8 * 1 * 20 == pytest.approx(525_336_576)
    # GPT-3 (dropout): the first stage of 8 holds 8 micro-batches' embedding-dropout masks,
    # s h / t = 2048 x 12288 / 8 bytes each
    g = catalog.model("gpt3-175b")
    first = mem.stage_activation_bytes(g, 1e8, 12, SL(seq_len=2048, tp=8, pp=8), stage="first")
    assert first - 1e8 * 8 * 12 == pytest.approx(8 * 2048 * 12288 / 8)


def test_single_stage_holds_both_the_embedding_mask_and_the_logits():
    # p = 1: the one stage is the first (embedding, its dropout mask) and the last (LM head,
    # FP32 logits). GPT-3 175B, s 2048, b 1, TP 8, h 12288, V 50257, 96 layers on the stage:
    #   mask   = s b h / t       = 2048 x 12288 / 8     =  3,145,728 bytes per micro-batch
    #   logits = 4 s b V / t     = 4 x 2048 x 50257 / 8 = 51,463,168 bytes
    # and 1F1B with p = 1 holds one micro-batch of all 96 layers.
    g = catalog.model("gpt3-175b")
    mask, logits = 2048 * 12288 / 8, 4 * 2048 * 50257 / 8
    lay = SL(seq_len=2048, micro_batch=1, tp=8, pp=1)
    for stage in ("first", "last"):
        got = mem.stage_activation_bytes(g, 1e8, 96, lay, stage=stage)
        assert got == pytest.approx(1e8 * 96 + mask + logits, rel=1e-12)
    # memory_per_gpu at p = 1 reports that stage: one layer's activations x 96 + both ends;
    # with full recomputation the layer being recomputed rebuilds its activations after the
    # loss's logits are gone, so the larger of the two counts
    b = mem.memory_per_gpu(g, Layout(gpus=8, tp=8, pp=1, zero_stage=3, recompute="none", global_batch=None))
    layer = mem.layer_activation_bytes(g, 2048, 1, 8, 1, 1, mem.LayerOptions(
        "none", (), True, False, linear_input_bytes=mem.cached_linear_input_bytes("bf16")))
    assert b.activations_bytes == pytest.approx(96 * layer + mask + logits, rel=1e-12)
    assert mask > 3e6    # the part the stage missed when it took the larger end alone
    b = mem.memory_per_gpu(g, Layout(gpus=8, tp=8, pp=1, zero_stage=3, recompute="full", global_batch=None))
    kept = mem.layer_activation_bytes(g, 2048, 1, 8, 1, 1, mem.LayerOptions(
        "full", (), True, False, linear_input_bytes=mem.cached_linear_input_bytes("bf16")))
    rebuilt = layer - kept
    assert rebuilt > logits    # GPT-3's layer (s b h (10 + 24/t) + masks) beats the logits
    assert b.activations_bytes == pytest.approx(96 * kept + mask + rebuilt, rel=1e-12)


def test_pipelined_ends_keep_one_term_each():
    # p > 1: the first stage adds only the masks of its micro-batches in flight, the last
    # only the logits (GPT-3, p = 8: 8 micro-batches in flight on stage 0, 1 on stage 7)
    g = catalog.model("gpt3-175b")
    mask, logits = 2048 * 12288 / 8, 4 * 2048 * 50257 / 8
    lay = SL(seq_len=2048, micro_batch=1, tp=8, pp=8, num_microbatches=16)
    first = mem.stage_activation_bytes(g, 1e8, 12, lay, stage="first")
    last = mem.stage_activation_bytes(g, 1e8, 12, lay, stage="last")
    assert first == pytest.approx(1e8 * 8 * 12 + 8 * mask, rel=1e-12)
    assert last == pytest.approx(1e8 * 1 * 12 + logits, rel=1e-12)
    # arrays: p = 1 and p = 2 side by side, each with its own rule
    both = mem.stage_activation_bytes(g, 1e8, 12, SL(seq_len=2048, tp=8, pp=np.array([1, 2]),
                                                     num_microbatches=16), stage="last")
    np.testing.assert_allclose(both, [1e8 * 12 + mask + logits, 1e8 * 12 + logits],
                               rtol=1e-12)


# ------------------------------------------------------------------ the composition

@pytest.mark.parametrize("model,kw", [
    ("llama3-70b", dict(gpus=64, tp=8, pp=4, zero_stage=1, global_batch=512, precision="fp8")),
    ("mixtral-8x7b", dict(gpus=64, tp=2, pp=4, ep=4, zero_stage=3, precision="mxfp8",
                          generation="blackwell", recompute="selective")),
])
def test_total_is_the_sum_of_the_terms_at_the_first_stage(model, kw):
    # the peak stage here is the first (most micro-batches in flight); its terms one by one
    m = catalog.model(model)
    lay = {"global_batch": None, **{k: x for k, x in kw.items() if k != "generation"}}
    b = mem.memory_per_gpu(m, Layout(**lay), generation=kw.get("generation", "hopper"))
    assert int(b.peak_stage) == 0
    n = int(b.peak_stage_layers)
    tp, pp, ep = kw["tp"], kw["pp"], kw.get("ep", 1)
    d = kw["gpus"] // (tp * pp)
    p = mem.stage_parameters(m, n, pp, "first")
    lay = SL(tp=tp, pp=pp, zero_group=d, ep=ep, expert_zero_group=kw["gpus"] // (pp * ep),
             zero_stage=kw["zero_stage"], seq_len=m.seq_len,
             num_microbatches=None if "global_batch" not in kw else kw["global_batch"] / d)
    w, g, o, ew = mem.stage_model_state_bytes(m, p, n, lay)
    q = mem.cached_linear_input_bytes(kw["precision"])
    layer = mem.layer_activation_bytes(m, None, 1, tp, 1, 1, mem.LayerOptions(
        kw.get("recompute", "none"), (), True, False, linear_input_bytes=q))
    act = mem.stage_activation_bytes(m, layer, n, lay)
    z3 = mem.stage_zero3_working_bytes(m, n, lay)
    w8 = mem.stage_fp8_weight_bytes(m, n, lay, kw["precision"], kw.get("generation", "hopper"))
    tensors = w + g + o + act + w8 + z3
    for got, want in [(b.weights_bytes, w), (b.grads_bytes, g), (b.optimizer_bytes, o),
                      (b.expert_weights_bytes, ew), (b.activations_bytes, act),
                      (b.fp8_weights_bytes, w8), (b.zero3_working_bytes, z3),
                      (b.total_bytes, tensors * (1 + mem.FRAGMENTATION) + mem.CONTEXT_BYTES)]:
        assert got == pytest.approx(want, rel=1e-12)


def test_one_list_of_terms_adds_up_to_the_total():
    # MEMORY_TERMS are to_gb's keys; every term but the experts' part of the weights adds
    # to the total (a dense BF16 layout, MoE + FP8 under ZeRO-3, each with arrays)
    for model, kw in [("llama3-8b", dict(gpus=np.array([8, 16]), tp=np.array([1, 2]))),
                      ("deepseek-v3", dict(gpus=1024, pp=16, ep=64, zero_stage=3,
                                           precision="fp8", recompute="full"))]:
        gb = mem.memory_per_gpu(catalog.model(model), Layout(**kw, global_batch=None)).to_gb()
        assert list(gb) == [*mem.MEMORY_TERMS, "total_gb"]
        parts = sum(gb[k] for k in mem.MEMORY_TERMS if k != "expert_weights_gb")
        np.testing.assert_allclose(parts, gb["total_gb"], rtol=1e-12)
    assert mem.MEMORY_TERMS["zero3_working_gb"] == "ZeRO-3 working set"


def test_full_recompute_rebuilds_one_layer_at_a_time():
    # Chen et al. 2016 §3: a recomputed layer's activations exist again during its own
    # backward, one layer and one micro-batch at a time. Llama 3 70B, s 8192, TP 8 with SP,
    # b 1, flash, BF16: without recomputation a layer keeps s b (R/t + S/t) bytes, with full
    # recomputation its input 2 s b h / t; the difference is added once, on every stage
    m = catalog.model("llama3-70b")
    q = mem.cached_linear_input_bytes("bf16")
    kw = dict(seq_len=8192, micro_batch=1, tp=8, cp=1, etp=1)
    layer = dict(sequence_parallel=True, flash_attention=True, recompute_modules=(),
                 linear_input_bytes=q)
    none = mem.layer_activation_bytes(m, **kw, options=mem.LayerOptions("none", **layer))
    full = mem.layer_activation_bytes(m, **kw, options=mem.LayerOptions("full", **layer))
    assert full == pytest.approx(2 * 8192 * 8192 / 8)
    rc = mem.recompute_working_bytes(none, full, np.array(["none", "selective", "full"]))
    np.testing.assert_allclose(rc, [0.0, 0.0, none - full])
    # torchtitan's per-op policy checkpoints the whole layer too; Megatron's named modules
    # are rebuilt one at a time and not counted
    assert mem.recompute_working_bytes(none, full, "none", "op_sac") == none - full
    assert mem.recompute_working_bytes(none, full, "none", "layernorm") == 0.0
    # one rule for which variants rebuild whole layers, shaped as ``recompute``
    np.testing.assert_array_equal(
        mem.rebuilds_whole_layers(np.array(["none", "selective", "full"])), [False, False, True])
    np.testing.assert_array_equal(
        mem.rebuilds_whole_layers(np.array(["none", "selective"]), ("op_sac",)), [True, True])
    # a middle stage of PP 4 (20 layers, 3 micro-batches in flight under 1F1B) adds it once
    st = SL(seq_len=8192, micro_batch=1, tp=8, pp=4, num_microbatches=16)
    mid = mem.stage_activation_bytes(m, full, 20, st, stage="middle", recompute_bytes=rc[2])
    assert mid == pytest.approx(full * 3 * 20 + (none - full))
    # the last stage: the FP32 logits (4 s b V / t = 525,336,576) and the rebuilt layer
    # (34,304 - 2,048 bytes per token, 264 MB) are not alive together: the logits count
    last = mem.stage_activation_bytes(m, full, 20, st, stage="last", recompute_bytes=rc[2])
    assert none - full == pytest.approx(8192 * (34_304 - 2_048))
    assert last == pytest.approx(full * 20 + 525_336_576)
    # at micro-batch 4 the rebuilt layer (4 x 264 MB) outgrows the logits (4 x 525 MB)? no:
    # both scale with b, so the larger term is fixed by the shapes, not the batch
    # and memory_per_gpu carries it: full recomputation's activations on PP 4
    b = mem.memory_per_gpu(m, Layout(gpus=64, tp=8, pp=4, micro_batch=1, global_batch=32, zero_stage=1,
                                     recompute="full", sequence_parallel=True), seq_len=8192)
    assert b.activations_bytes == pytest.approx(full * 20 * 4 + (none - full), rel=1e-9)
    with pytest.raises(InputError) as e:
        mem.recompute_working_bytes(-1.0, 0.0, "full")
    assert e.value.param == "none_bytes"


def test_the_loss_holds_four_or_twelve_bytes_per_logit(llama70):
    # a fused cross-entropy (Megatron-Core's vocab-parallel one, Korthikanti §4.3) holds the
    # FP32 logits, 4 bytes; PyTorch's cross_entropy on logits upcast to FP32 (torchtitan)
    # holds the saved FP32 log-softmax, its output's gradient and its input's, 12
    assert mem.loss_bytes_per_logit("fused") == 4.0
    assert mem.loss_bytes_per_logit("fp32") == 12.0
    with pytest.raises(InputError) as e:
        mem.loss_bytes_per_logit("chunked")
    assert e.value.param == "loss"
    lay = SL(seq_len=8192, micro_batch=1, tp=8, pp=4)
    four = mem.stage_activation_bytes(llama70, 1e8, 20, lay, stage="last")
    twelve = mem.stage_activation_bytes(llama70, 1e8, 20, lay, stage="last", loss_bytes=12.0)
    assert twelve - four == pytest.approx(8 * 8192 * 128256 / 8)
    # memory_per_gpu: each stack's usual loss unless one is named
    lay = dict(gpus=64, tp=8, pp=1, zero_stage=1, global_batch=None)
    assert mem.STACK_LOSS == {"megatron": "fused", "fsdp": "fp32", "deepspeed": "fused",
                              "nanotron": "fused"}
    a = mem.memory_per_gpu(llama70, Layout(**lay), seq_len=8192, stack="fsdp")
    b = mem.memory_per_gpu(llama70, Layout(**lay), MemoryOptions(loss="fp32"), seq_len=8192, stack="fsdp")
    c = mem.memory_per_gpu(llama70, Layout(**lay), MemoryOptions(loss="fp32"), seq_len=8192)
    assert float(a.total_bytes) == float(b.total_bytes) == float(c.total_bytes)


def test_stage_layout_checks_its_sizes_once():
    # the stage terms read a StageLayout checked at construction; the activations need s
    for kwargs, param in [(dict(zero_group=0), "zero_group"), (dict(tp=1.5), "tp"),
                          (dict(expert_zero_group=-1), "expert_zero_group"),
                          (dict(zero_stage=4), "zero_stage"), (dict(num_microbatches=0), "num_microbatches"),
                          (dict(optimizer_moments="fp8"), "optimizer_moments")]:
        with pytest.raises(InputError) as e:
            SL(**kwargs)
        assert e.value.param == param
    with pytest.raises(InputError) as e:
        mem.stage_activation_bytes(catalog.model("llama3-8b"), 1e8, 32, SL())
    assert e.value.param == "seq_len"

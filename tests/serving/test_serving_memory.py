"""Serving memory: KV bytes per token against the published counts, weights per format
against a hand count, concurrency beside weights and activations."""

import numpy as np
import pytest

from llmcost import _validate as v
from llmcost import catalog
from llmcost.serving import memory as mem

CAT = catalog.default()


@pytest.mark.parametrize("model_id, expected", [
    # Llama 3.1 8B: 2 (K and V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 128 KiB
    ("llama3-8b", 2 * 32 * 8 * 128 * 2),
    # Llama 3.1 70B: 2 x 80 x 8 x 128 x 2 = 320 KiB
    ("llama3-70b", 2 * 80 * 8 * 128 * 2),
    # DeepSeek-V3 MLA: (d_c 512 + d_h^R 64) x 61 layers x 2 bytes (DeepSeek-V2 §2.1.4)
    ("deepseek-v3", (512 + 64) * 61 * 2),
])
def test_kv_bytes_per_token_bf16(model_id, expected):
    m = CAT.model(model_id)
    assert m.layers * mem.model_kv_per_layer(m, "bf16") == expected
    assert expected in (131072, 327680, 70272)


def test_kv_fp8_halves_bf16():
    m = CAT.model("llama3-70b")
    assert mem.model_kv_per_layer(m, "fp8") * m.layers == 2 * 80 * 8 * 128 * 1


def test_sliding_window_layers_cache_only_the_window():
    # gpt-oss-120b: 36 layers, 18 with a 128-token window, 8 KV heads of 64 dims
    m = CAT.model("gpt-oss-120b")
    assert (m.layers, m.window_layers, m.attention_window, m.kv_heads, m.head_dim) == \
        (36, 18, 128, 8, 64)
    per_layer = 2 * 8 * 64 * 2
    c = 8192
    want = per_layer * (18 * c + 18 * 128)
    assert mem.model_kv_bytes_per_sequence(m, c, "bf16", block_tokens=1) == want
    # below the window every layer holds every token
    assert mem.model_kv_bytes_per_sequence(m, 100, "bf16", block_tokens=1) == per_layer * 36 * 100


def test_paged_blocks_round_up():
    assert mem.kv_bytes_per_sequence(10.0, 2, 17, block_tokens=16) == 10.0 * 2 * 32


# Llama 3 8B by hand: attention q,o 2 x 4096^2 + k,v 2 x 4096 x 1024 = 41,943,040; SwiGLU
# 3 x 4096 x 14336 = 176,160,768; two RMSNorms 8,192 -> 218,112,000 per layer x 32, plus the
# final norm 4,096; embedding and untied head 2 x 128,256 x 4,096 = 1,050,673,152
LLAMA3_8B_DENSE = 32 * (41_943_040 + 176_160_768 + 8_192) + 4_096
LLAMA3_8B_VOCAB = 2 * 128_256 * 4_096
# bytes per weight: bits + scale bits / group, over 8
HAND_BYTES = {"bf16": 2.0, "fp8": 1.0, "int8": 1.0,
              "int4": (4 + (16 + 4) / 128) / 8,          # AWQ/GPTQ: FP16 scale + 4-bit zero / 128
              "mxfp4": (4 + 8 / 32) / 8,                 # E8M0 per 32 (OCP MX v1.0)
              "nvfp4": (4 + 8 / 16) / 8, "fp4": (4 + 8 / 16) / 8}   # E4M3 per 16


def test_llama3_8b_split_is_the_hand_count():
    dense, expert, vocab = mem.model_weight_split(CAT.model("llama3-8b"))
    assert (dense, expert, vocab) == (LLAMA3_8B_DENSE, 0, LLAMA3_8B_VOCAB)
    assert dense + vocab == 8_030_261_248          # the published 8.03B


@pytest.mark.parametrize("fmt", sorted(HAND_BYTES))
@pytest.mark.parametrize("tp", [1, 2, 8])
def test_weights_per_gpu_by_format_hand_count(fmt, tp):
    m = CAT.model("llama3-8b")
    # embedding and head stay BF16; everything else in the format; both split over tp
    want = (LLAMA3_8B_DENSE * HAND_BYTES[fmt] + LLAMA3_8B_VOCAB * 2) / tp
    got = mem.weights_bytes_per_gpu(*mem.model_weight_split(m), tp, fmt)
    assert got == pytest.approx(want, rel=1e-12)


def test_moe_experts_quantized_apart():
    # DeepSeek-V3 routed experts: 58 MoE layers x 256 experts x 3 x 7168 x 2048
    m = CAT.model("deepseek-v3")
    dense, expert, vocab = mem.model_weight_split(m)
    assert expert == 58 * 256 * 3 * 7168 * 2048
    got = mem.weights_bytes_per_gpu(dense, expert, vocab, 8, "fp8", "nvfp4")
    want = (dense * 1.0 + expert * 0.5625 + vocab * 2.0) / 8
    assert got == pytest.approx(want, rel=1e-12)
    # attention data-parallel: each GPU keeps all of the dense part
    got_dp = mem.weights_bytes_per_gpu(dense, expert, vocab, 8, "fp8", "nvfp4", True)
    assert got_dp == pytest.approx(dense + (expert * 0.5625 + vocab * 2.0) / 8, rel=1e-12)


def test_kv_shards_over_tp_until_heads_run_out():
    assert mem.kv_shard_fraction(8, 4) == 0.25
    assert mem.kv_shard_fraction(8, 16) == pytest.approx(1 / 8)     # replicated past 8
    assert mem.kv_shard_fraction(1, 8, "mla") == 1.0                 # latent on every rank


def test_max_concurrency_is_the_free_memory_over_one_sequence():
    # 80 GiB x 0.9 - 16 GB weights - 1 GB activations, over 1 GB a sequence
    m = 80 * 2**30
    want = np.floor((0.9 * m - 16e9 - 1e9) / 1e9)
    assert mem.max_concurrency(m, 16e9, 1e9, 1e9, 0.9) == want == 60
    assert mem.max_concurrency(m, 90e9, 1e9, 1e9, 0.9) == 0


def test_bad_format_names_the_parameter():
    with pytest.raises(v.InputError) as e:
        mem.bytes_per_weight("int3")
    assert e.value.param == "weights" and "int3" in str(e.value)

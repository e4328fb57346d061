"""The default global batch: DeepSeek LLM's batch law, clipped to what published runs used."""

import math

import numpy as np
import pandas as pd
import pytest

from llmcost import InputError, catalog
from llmcost.training import batch as bt

TABLE = catalog.published_batches()
ROW = TABLE.set_index("id")


def _deepseek_compute(layers, d_model, seq_len, tokens):
    """C = M D with DeepSeek's non-embedding FLOPs per token (arXiv:2401.02954 §3.2):
    M = 72 n_layer d_model^2 + 6 n_layer d_model l_seq."""
    return (72 * layers * d_model ** 2 + 6 * layers * d_model * seq_len) * tokens


def test_law_at_compute_worked_by_hand():
    # 0.2920 x (1e20)^0.3271 = 0.2920 x 10^6.542 = 0.2920 x 3.4834e6 = 1.0172e6 tokens
    assert bt.batch_tokens_scaling_law(1e20) == pytest.approx(1.0172e6, rel=1e-3)
    # 0.2920 x (1e24)^0.3271 = 0.2920 x 10^7.8504 = 0.2920 x 7.0860e7 = 2.0691e7 tokens
    assert bt.batch_tokens_scaling_law(1e24) == pytest.approx(2.0691e7, rel=1e-3)


# DeepSeek LLM, arXiv:2401.02954 Table 2: layers, d_model, context 4096, batch in sequences,
# 2.0T tokens. Their runs' batches were set by this law; 10% is inside the broad near-optimal
# band of their Fig. 3 and far below what a wrong exponent gives (0.30 instead of 0.3271 moves
# the batch 4x at 1e23 FLOPs).
DEEPSEEK = {"7b": (30, 4096, 2304), "67b": (95, 8192, 4608)}


@pytest.mark.parametrize("size", DEEPSEEK)
def test_law_reproduces_deepseek_llm_runs(size):
    layers, d_model, sequences = DEEPSEEK[size]
    c = _deepseek_compute(layers, d_model, 4096, 2.0e12)   # 7.85e22 and 9.56e23 FLOPs
    published = sequences * 4096                           # 9.44M and 18.9M tokens
    assert published / bt.batch_tokens_scaling_law(c) == pytest.approx(1.0, abs=0.10)
    # the catalog row holds the same published batch
    assert ROW.loc[f"deepseek-llm-{size}", "batch_tokens"] == published


@pytest.mark.parametrize("size,params", [("7b", 7e9), ("67b", 67e9)])
def test_our_compute_convention_moves_the_law_by_at_most_6_percent(size, params):
    # callers pass 6 N D, DeepSeek fitted on M D: the docstring's 2% and 6%
    layers, d_model, _ = DEEPSEEK[size]
    ours = bt.batch_tokens_scaling_law(6 * params * 2.0e12)
    theirs = bt.batch_tokens_scaling_law(_deepseek_compute(layers, d_model, 4096, 2.0e12))
    assert abs(math.log(ours / theirs)) <= math.log(1.06)


def test_table_transcribes_the_published_batches():
    # Llama 3 405B (arXiv:2407.21783 §3.4.1, Table 4): 4M tokens of 4096-token sequences,
    # finally 16M tokens = 2048 sequences of 8192
    llama = ROW.loc["llama3-405b"]
    assert (llama.seq_len, llama.batch_sequences, llama.batch_tokens) == (8192, 2048, 2048 * 8192)
    assert llama.batch_tokens_start == 1024 * 4096 and llama.tokens == 15.6e12
    # DeepSeek-V3 (arXiv:2412.19437 §4.2): 3072 -> 15360 sequences of 4096, 37B active, 14.8T
    v3 = ROW.loc["deepseek-v3"]
    assert (v3.batch_sequences, v3.batch_tokens, v3.batch_tokens_start) == (
        15360, 15360 * 4096, 3072 * 4096)
    assert (v3.params_b, v3.active_params_b, v3.tokens) == (671, 37, 14.8e12)
    # LLaMA 65B (arXiv:2302.13971 Table 2): 4M tokens; GPT-3 175B (arXiv:2005.14165 Table 2.1)
    assert ROW.loc["llama-65b", "batch_tokens"] == 4e6
    assert ROW.loc["gpt3-175b", "batch_tokens"] == 3.2e6
    # PaLM 540B (arXiv:2204.02311 §5): 512 -> 2048 sequences of 2048
    palm = ROW.loc["palm-540b"]
    assert (palm.batch_tokens, palm.batch_tokens_start) == (2048 * 2048, 512 * 2048)


def test_table_is_consistent_and_spans_the_compute_range():
    assert len(TABLE) >= 12
    assert TABLE.compute_flops.min() <= 1e21 and TABLE.compute_flops.max() >= 3.7e25
    for col in ("source", "as_of"):
        assert TABLE[col].astype(str).str.strip().ne("").all()
    assert np.allclose(TABLE.compute_flops, 6 * TABLE.active_params_b * 1e9 * TABLE.tokens,
                       rtol=1e-6)
    assert (TABLE.active_params_b <= TABLE.params_b).all()
    seq = TABLE.dropna(subset=["batch_sequences"])
    assert (seq.batch_sequences * seq.seq_len == seq.batch_tokens).all()
    ramped = TABLE.dropna(subset=["batch_tokens_start"])
    assert (ramped.batch_tokens_start < ramped.batch_tokens).all()


def test_bounds_contain_every_runs_own_batch():
    low, high = bt.batch_bounds_tokens(TABLE.compute_flops.to_numpy(), TABLE)
    assert ((low <= TABLE.batch_tokens) & (TABLE.batch_tokens <= high)).all()


def test_bounds_without_a_run_still_contain_its_batch_for_28_of_30():
    # Left out, a run falls outside the bounds only if its batch was the unique extreme of its
    # neighbourhood. Two are:
    # - DeepSeek-V3's 62.9M (3.29e24 FLOPs) is the largest batch in the table; within a decade
    #   the next largest is DeepSeek-V2's 37.7M (9216 x 4096, 1.02e24 FLOPs);
    # - DeepSeekMoE 16B's 18M (3.36e22 FLOPs): within a decade (3.4e21-3.4e23) the largest
    #   other batch is DeepSeek LLM 7B's 9.44M; DeepSeek LLM 67B's 18.9M (8.0e23) is 1.4
    #   decades away.
    # Every other run shares its extreme with a neighbour (the many 4M-token runs, GPT-3's
    # 0.5M trio, Llama 3 405B and Apertus 70B at 16.8M) or lies strictly inside.
    outside = {}
    for i, run in TABLE.iterrows():
        low, high = bt.batch_bounds_tokens(run.compute_flops, TABLE.drop(index=i))
        if not low <= run.batch_tokens <= high:
            outside[run.id] = high
    assert len(TABLE) - len(outside) == 28 and len(TABLE) == 30
    assert outside == {"deepseek-v3": 9216 * 4096, "deepseekmoe-16b": 2304 * 4096}


def test_llama3_405b_gets_its_published_16m_batch():
    # C = 6 x 405e9 x 15.6e12 = 3.7908e25 FLOPs; law: 0.2920 x 10^(25.5787 x 0.3271) = 67.9M.
    # Within a decade (3.8e24-3.8e26): Apertus 70B (6.3e24, 16.8M), Nemotron-4 340B (1.84e25,
    # 9.44M), Llama 3 405B (16.8M); Falcon 180B at 3.78e24 is just over a decade away.
    # The law is lowered to 16,777,216 = 2048 sequences of 8192: Llama 3's published batch.
    c = 6 * 405e9 * 15.6e12
    assert bt.batch_tokens_scaling_law(c) == pytest.approx(67.9e6, rel=2e-3)
    assert bt.batch_bounds_tokens(c, TABLE) == (9437184, 16777216)
    assert bt.default_global_batch_tokens(c, TABLE, seq_len=8192) == 16777216
    choice = bt.global_batch_choice(c, TABLE, seq_len=8192)
    assert choice.sequences == 2048 and choice.clipped == "lowered"
    assert set(choice.runs) == {"apertus-70b", "nemotron4-340b", "llama3-405b"}
    assert choice.reason.startswith("16.8M tokens") and "67.9M" in choice.reason


def test_deepseek_v3_gets_the_law_half_its_published_63m_batch():
    # C = 6 x 37e9 x 14.8e12 = 3.2856e24 FLOPs; law: 0.2920 x 10^(24.5166 x 0.3271) = 30.53M,
    # inside the 3M (Chinchilla) - 62.9M (DeepSeek-V3) of the runs within a decade, so it
    # stands; 30.53M / 4096 = 7454.3 -> 7454 sequences. DeepSeek-V3 itself used 2.06x that.
    c = 6 * 37e9 * 14.8e12
    assert bt.batch_tokens_scaling_law(c) == pytest.approx(30.53e6, rel=2e-3)
    assert bt.batch_bounds_tokens(c, TABLE) == (3e6, 15360 * 4096)
    assert bt.default_global_batch_tokens(c, TABLE, seq_len=4096) == 7454 * 4096
    choice = bt.global_batch_choice(c, TABLE, seq_len=4096)
    assert choice.clipped is None and choice.sequences == 7454
    assert ROW.loc["deepseek-v3", "batch_tokens"] / choice.tokens == pytest.approx(2.06, abs=0.01)


def test_window_widens_below_the_published_runs():
    # 1e18 FLOPs: GPT-3 Small (2.25e20) is 2.35 decades away and Medium (6.3e20) 2.80, so the
    # window widens in half decades to 3; both used 0.5M tokens. The law's 0.2920 x 10^5.8878
    # = 225.5k tokens is raised to 500k, 244 sequences of 2048 (499,712 tokens).
    choice = bt.global_batch_choice(1e18, TABLE, seq_len=2048)
    assert choice.window_decades == 3.0 and set(choice.runs) == {"gpt3-small", "gpt3-medium"}
    assert choice.law_tokens == pytest.approx(225.5e3, rel=2e-3)
    assert choice.clipped == "raised" and choice.tokens == 244 * 2048
    assert "widened to 3 decades" in choice.reason


def test_vectorized_over_compute_and_seq_len():
    c = np.array([[1e20, 1e22, 1e23], [3e24, 1e25, 4e25]])
    law = bt.batch_tokens_scaling_law(c)
    low, high = bt.batch_bounds_tokens(c, TABLE)
    tokens = bt.default_global_batch_tokens(c, TABLE)
    assert law.shape == low.shape == high.shape == tokens.shape == (2, 3)
    for idx in np.ndindex(c.shape):
        assert tokens[idx] == bt.default_global_batch_tokens(c[idx], TABLE)
        assert (low[idx], high[idx]) == bt.batch_bounds_tokens(c[idx], TABLE)
    seq = np.array([2048, 4096, 8192])
    rounded = bt.default_global_batch_tokens(c.reshape(-1, 1), TABLE, seq_len=seq)
    assert rounded.shape == (6, 3)
    assert (rounded % seq == 0).all()
    assert np.all(np.abs(rounded - tokens.reshape(-1, 1)) <= seq / 2)
    assert np.ndim(bt.default_global_batch_tokens(1e23, TABLE)) == 0


@pytest.mark.parametrize("bad", [0, -1e22, float("nan"), float("inf"), [1e22, float("nan")]])
def test_bad_compute_names_compute_flops(bad):
    for call in (lambda: bt.batch_tokens_scaling_law(bad),
                 lambda: bt.batch_bounds_tokens(bad, TABLE),
                 lambda: bt.default_global_batch_tokens(bad, TABLE),
                 lambda: bt.global_batch_choice(bad if np.ndim(bad) == 0 else 0, TABLE)):
        with pytest.raises(InputError) as e:
            call()
        assert e.value.param == "compute_flops" and "compute_flops" in str(e.value)


def test_bad_seq_len_and_table_are_named():
    for seq_len in (0, 2048.5):
        with pytest.raises(InputError) as e:
            bt.default_global_batch_tokens(1e23, TABLE, seq_len=seq_len)
        assert e.value.param == "seq_len" and str(seq_len) in str(e.value)
    for table in (TABLE.head(1), TABLE.drop(columns="batch_tokens"), TABLE.to_dict()):
        with pytest.raises(InputError) as e:
            bt.batch_bounds_tokens(1e23, table)
        assert e.value.param == "table"
    with pytest.raises(InputError) as e:
        bt.global_batch_choice([1e23, 1e24], TABLE)
    assert e.value.param == "compute_flops"


def test_a_users_own_table_is_used():
    mine = pd.DataFrame({"id": ["a", "b"], "compute_flops": [1e23, 2e23],
                         "batch_tokens": [1e6, 2e6]})
    # the law's 9.7M at 1e23 lies above both runs: lowered to the larger, 2M
    assert bt.default_global_batch_tokens(1e23, mine) == 2e6

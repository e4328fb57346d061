"""Parameter counts and training FLOPs against their published sources."""

import numpy as np
import pytest

from llmcost import InputError, catalog
from llmcost.training import flops as fl
from llmcost.training.arch import ModelSpec
from llmcost.utilization import mfu

# Narayanan et al. 2021 (arXiv:2104.04473), Table 1: params (B), heads, h, layers, TP, PP,
# GPUs, global batch, achieved TFLOP/s per GPU, % of peak. V = 51200, s = 2048, A100 312.
TABLE1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 44),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 44),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 46),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 43),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 44),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 45),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 47),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 50),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 52),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 52),
]
V, S, A100 = 51200, 2048, 312.0


@pytest.mark.parametrize("row", TABLE1, ids=[f"{r[0]}B" for r in TABLE1])
def test_megatron_eq2_reproduces_table1_parameters(row):
    printed_b, heads, h, l = row[:4]
    p = fl.megatron_parameter_count(l, h, V, S)
    # Table 1 prints one decimal: Eq. 2 must round to the printed figure, and lie within 1%
    # of it wherever one decimal resolves 1% (the 1.7B row is 1.652B exactly: 1.65 -> 1.7).
    assert round(p / 1e9, 1) == pytest.approx(printed_b)
    assert abs(p / 1e9 - printed_b) <= max(0.01 * printed_b, 0.05)


@pytest.mark.parametrize("row", TABLE1, ids=[f"{r[0]}B" for r in TABLE1])
def test_general_count_equals_eq2_plus_final_norm(row):
    _, heads, h, l = row[:4]
    general = fl.parameter_count(ModelSpec(layers=l, hidden=h, heads=heads, vocab=V, seq_len=S))
    # Eq. 2 counts 13h per layer of biases and LayerNorms and omits the final LayerNorm (2h).
    assert general - fl.megatron_parameter_count(l, h, V, S) == pytest.approx(2 * h, abs=1e-3)


# Table 1's TFLOP/s against % of peak is checked on the catalog rows (published_runs.csv vs
# the GPU peak in gpus.csv): tests/test_spot_reliability.py::
# test_published_tflops_over_catalog_peak_equals_printed_percent


@pytest.mark.parametrize("row", TABLE1, ids=[f"{r[0]}B" for r in TABLE1])
@pytest.mark.parametrize("recompute", ["full", "none", "selective"])
def test_architecture_flops_equal_paper_equations(row, recompute):
    _, heads, h, l, *_rest = row
    B = row[7]
    per_token = fl.flops_per_token(fl.ModelShape(l, h, heads, V), S, recompute=recompute)
    # Eq. 3 (full) of Narayanan 2021; Eq. 7 (none) and Eq. 8 (selective) of Korthikanti 2022,
    # written out here independently of the library.
    if recompute == "full":
        paper = 96 * B * S * l * h**2 * (1 + S / (6 * h) + V / (16 * l * h))
    elif recompute == "none":
        paper = 72 * B * S * l * h**2 * (1 + S / (6 * h) + V / (12 * l * h))
    else:
        paper = 72 * B * S * l * h**2 * (1 + S / (3 * h) + V / (12 * l * h))
    assert per_token * B * S == pytest.approx(paper, rel=1e-12)
    assert fl.megatron_flops_per_iteration(B, S, l, h, V, recompute) == pytest.approx(paper, rel=1e-12)


def test_table1_iteration_time_implied_by_eq3():
    # 145.6B row: F = Eq. 3; time = F / (GPUs x 148 TFLOP/s). Evaluated by hand:
    # 96*2304*2048*80*12288^2*(1 + 2048/73728 + 51200/15728640) = 5.6417e18 FLOP -> 24.82 s
    F = fl.megatron_flops_per_iteration(2304, 2048, 80, 12288, 51200, "full")
    assert F == pytest.approx(5.6417e18, rel=1e-4)
    assert F / (1536 * 148e12) == pytest.approx(24.82, rel=1e-3)


def test_training_time_rule_gpt3():
    # §5.1: 8TP/(nX): GPT-3 175B, 300B tokens, 1024 GPUs, 140 TFLOP/s -> 34 days;
    # 1T (1008B), 450B tokens, 3072 GPUs, 163 TFLOP/s -> 84 days.
    assert 8 * 300e9 * 175e9 / (1024 * 140e12) / 86400 == pytest.approx(34, abs=0.5)
    assert 8 * 450e9 * 1008e9 / (3072 * 163e12) / 86400 == pytest.approx(84, abs=0.5)
    # The rule is Eq. 3 per token (96 l h^2 = 8 x 12 l h^2) without its s/6h and V/16lh
    # terms; the exact Eq. 3 for GPT-3's shape (V 51200) gives 34.73 days (by hand:
    # 96*96*12288^2*(1 + 2048/73728 + 51200/18874368) * 300e9 / (1024*140e12) / 86400).
    m = catalog.model("gpt3-175b").with_(vocab=51200)
    days = m.flops_per_token("full") * 300e9 / (1024 * 140e12) / 86400
    assert days == pytest.approx(34.73, abs=0.01)


def test_palm_540b_mfu():
    # PaLM App. B: 238.3K tokens/s on 6144 TPU v4 (275 TFLOP/s), N = 540.35B;
    # 6N alone gives 45.7%; with 12 L H Q T (L 118, H 48, Q 256, T 2048) 46.2%.
    tps, n = 238.3e3, 540.35e9
    assert mfu(tps, fl.flops_per_token_6n(n), 275, 6144) == pytest.approx(0.457, abs=0.0006)
    palm = fl.flops_per_token_palm(n, 118, 48, 256, 2048)
    assert mfu(tps, palm, 275, 6144) == pytest.approx(0.462, abs=0.0006)


@pytest.mark.parametrize("model_id", [
    "gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b",
    "llama3-405b", "mistral-7b", "qwen2.5-7b", "qwen2.5-72b"])
def test_catalog_models_match_published_counts(model_id):
    m = catalog.model(model_id)
    assert m.params == pytest.approx(m.published_params, rel=0.01)


def test_llama3_405b_from_architecture():
    # arXiv:2407.21783 Table 3: 126 layers, d 16384, 128 heads, 8 KV heads, FFN 53248,
    # vocab 128256; untied embeddings, RMSNorm, no biases.
    p = fl.parameter_count(ModelSpec(
        layers=126, hidden=16384, heads=128, vocab=128256, seq_len=8192, kv_heads=8,
        ffn_hidden=53248, gated_ffn=True, tied_embeddings=False, position_embedding="rope",
        norm="rmsnorm", biases="none"))
    assert p == pytest.approx(405e9, rel=0.01)
    # by hand: per layer 2*16384^2 + 2*16384*1024 + 3*16384*53248 + 2*16384
    per_layer = 2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384
    assert p == 126 * per_layer + 16384 + 2 * 128256 * 16384


def test_six_n_and_chinchilla():
    assert fl.flops_per_token_6n(70e9) == 4.2e11
    # Hoffmann et al. 2022 Table 3: 70B parameters -> 1.4T tokens (20 per parameter).
    assert fl.chinchilla_optimal_tokens(70e9) == pytest.approx(1.4e12)
    assert fl.training_flops(6 * 70e9, 1.4e12) == pytest.approx(5.88e23)


def test_broadcasting_keeps_shape():
    layers = np.array([[24], [48]])
    hidden = np.array([2304, 4608, 9216])
    out = fl.flops_per_token(fl.ModelShape(layers, hidden, 24, 51200), 2048)
    assert out.shape == (2, 3)
    assert out[1, 2] == fl.flops_per_token(fl.ModelShape(48, 9216, 24, 51200), 2048)
    rec = np.array(["none", "selective", "full"])
    gpt = fl.ModelShape(24, 2304, 24, 51200)
    # the group fills in the defaults: MHA, f = 4h, d_head = h / a
    assert (gpt.kv_heads, gpt.ffn_hidden, gpt.head_dim) == (24, 4 * 2304, 96)
    by_name = fl.flops_per_token(gpt, 2048, recompute=rec)
    assert by_name.shape == (3,)
    assert by_name[2] == fl.flops_per_token(gpt, 2048, recompute="full")
    assert np.all(np.diff(by_name) > 0)


@pytest.mark.parametrize("kwargs,param", [
    (dict(layers=0), "layers"), (dict(hidden=float("nan")), "hidden"),
    (dict(heads=7), "heads"), (dict(recompute="some"), "recompute"),
    (dict(kv_heads=5), "kv_heads"), (dict(seq_len=-1), "seq_len"),
    (dict(layers=2.5), "layers"),
])
def test_bad_input_names_the_parameter(kwargs, param):
    args = dict(layers=24, hidden=2304, heads=24, vocab=51200, seq_len=2048)
    args.update(kwargs)
    with pytest.raises(InputError) as e:
        seq_len, recompute = args.pop("seq_len"), args.pop("recompute", "none")
        fl.flops_per_token(fl.ModelShape(**args), seq_len, recompute)
    assert e.value.param == param
    assert param in str(e.value)

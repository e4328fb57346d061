"""Hugging Face configs of GPTBigCode (SantaCoder, StarCoder), StarCoder2, GPT-NeoX (Pythia,
GPT-NeoX-20B), OLMo and OLMo 2: published parameter counts, each family's layout counted by
hand from its transformers modelling code, and the facts each reader must get right. Configs are
transcriptions listed in tests/data/hf_configs/SOURCES.csv; the link round trip and the sources
check of tests/training/test_hf_config.py cover these files too."""

from pathlib import Path

import pytest
from test_hf_config import one_line_error

from llmcost import InputError
from llmcost.training import hf_config as hf
from llmcost.training.arch import ModelSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def load(name: str) -> dict:
    return hf.read_config((DATA / f"{name}.json").read_bytes(), name=f"{name}.json")


def model(name: str, **kw) -> ModelSpec:
    return hf.model_from_config(load(name), **kw)[0]


#: name -> (published total parameters, relative tolerance, source)
PUBLISHED = {
    "starcoderbase-15.5b": (15.5e9, 0.02, "StarCoder, arXiv:2305.06161, abstract and §5: "
                                          "StarCoder and StarCoderBase are 15.5B-parameter models"),
    "starcoder2-15b": (15_957_889_024, 1e-12,
                       "bigcode/starcoder2-15b safetensors metadata, 15,957,889,024 (a model card "
                       "in the stored index quotes it); arXiv:2402.19173 calls the model 15B"),
    "pythia-12b": (11_846_072_320, 1e-12,
                   "EleutherAI/pythia-12b model card, 'Naming convention and parameter count': "
                   "11,846,072,320 total; Pythia, arXiv:2304.01373, Table 1: 11,327,027,200 "
                   "non-embedding"),
    "gpt-neox-20b": (20_554_567_680, 1e-12,
                     "EleutherAI/gpt-neox-20b model card, hyperparameter table: n_parameters "
                     "20554567680 (GPT-NeoX-20B, arXiv:2204.06745)"),
    "olmo-7b": (6_888_095_744, 0.02, "allenai/OLMo-7B as loaded (OLMoForCausalLM, 6,888,095,744 "
                                     "parameters, a log in the stored index); named 7B"),
    "olmo2-7b": (7_298_617_344, 0.02, "allenai/OLMo-2-1124-7B safetensors metadata, "
                                      "7,298,617,344 (model cards in the stored index); "
                                      "OLMo 2, arXiv:2501.00656, names it 7B"),
    "olmo2-32b": (32_234_279_936, 0.02, "allenai/OLMo-2-0325-32B, 32,234,279,936 (config-verified "
                                        "count in the stored index); named 32B"),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_config_reproduces_published_parameter_counts(name):
    total, tol, _source = PUBLISHED[name]
    assert model(name).params == pytest.approx(total, rel=tol)


# ---------------------------------------------------------------------------- GPTBigCode

def bigcode_params(L, h, V, f, n_positions, kv_dim):
    """GPTBigCode by hand: c_attn h -> h + 2 kv_dim and c_proj, c_fc and c_proj of the GELU
    MLP, all with biases; ln_1, ln_2 (2h each); wte, wpe (n_positions x h), ln_f; lm_head
    tied to wte."""
    attn = h * (h + 2 * kv_dim) + (h + 2 * kv_dim) + h * h + h
    mlp = 2 * h * f + f + h
    return L * (attn + mlp + 4 * h) + V * h + n_positions * h + 2 * h


def test_starcoderbase_is_multi_query_with_learned_positions_and_a_tied_head():
    m = model("starcoderbase-15.5b")
    assert (m.kv_heads, m.head_dim, m.position_embedding, m.tied_embeddings) == (1, 128,
                                                                               "learned", True)
    assert not m.gated_ffn and m.biases == "all" and m.norm == "layernorm"
    # n_positions 8192 is the sequence length read, so the position table is 8192 x 6144
    assert m.seq_len == 8192 and m.embedding_params == 49152 * 6144 + 8192 * 6144
    assert m.params == bigcode_params(40, 6144, 49152, 24576, 8192, 128) == 15_517_456_384
    # a MultiPL-T StarCoder-15B fine-tune is counted 15,517,456,384 in the stored index too


def test_santacoder_is_the_hand_count_of_its_config():
    m = model("santacoder-1.1b")
    assert m.kv_heads == 1 and m.dropout          # attn/embd/resid_pdrop 0.1
    assert m.params == bigcode_params(24, 2048, 49280, 8192, 2048, 128) == 1_124_886_528
    # SantaCoder, arXiv:2301.03988: "1.1B parameter models", a rounded name (1.12e9)
    assert round(m.params / 1e8) == 11


def test_gpt_bigcode_defaults_and_aliases():
    c = load("starcoderbase-15.5b")
    base = model("starcoderbase-15.5b")
    # n_inner null: 4 x n_embd (GPTBigCodeConfig); here n_inner is already 4 x 6144
    assert hf.model_from_config(dict(c, n_inner=None))[0].ffn_hidden == 4 * 6144
    # multi_query false: one KV head per query head
    mha = hf.model_from_config(dict(c, multi_query=False))[0]
    assert mha.kv_heads == 48
    assert mha.params - base.params == 40 * (2 * 6144 * (6144 - 128) + 2 * (6144 - 128))
    # the attribute_map names read the same (hidden_size, num_attention_heads, ...)
    renamed = {k: v for k, v in c.items() if k not in ("n_embd", "n_head", "n_layer",
                                                       "n_positions")}
    renamed.update(hidden_size=6144, num_attention_heads=48, num_hidden_layers=40,
                   max_position_embeddings=8192)
    assert hf.model_from_config(renamed)[0] == base
    # no dropout key: GPTBigCodeConfig's 0.1 dropouts
    assert base.dropout
    assert not hf.model_from_config(dict(c, resid_pdrop=0.0, embd_pdrop=0.0,
                                         attn_pdrop=0.0))[0].dropout


def test_gpt_bigcode_position_table_follows_the_sequence_length():
    # ModelSpec counts learned positions at the training length; n_positions when not given
    m, warnings = hf.model_from_config(load("santacoder-1.1b"))
    assert m.seq_len == 2048 and any("n_positions 2048" in w for w in warnings)
    short = model("santacoder-1.1b", seq_len=1024)
    assert m.params - short.params == 1024 * 2048
    no_max = {k: v for k, v in load("santacoder-1.1b").items() if k != "n_positions"}
    m, warnings = hf.model_from_config(no_max)
    assert m.seq_len == 1024 and "n_positions default" in warnings[-1]


# ---------------------------------------------------------------------------- StarCoder2

def starcoder2_params(L, h, V, f, kv_dim, tied):
    """Starcoder2 by hand: q, k, v, o and c_fc, c_proj with biases (use_bias), two LayerNorms
    per layer (2h each), final LayerNorm, embed_tokens, lm_head unless tied."""
    attn = 2 * h * h + 2 * h * kv_dim + (2 * h + 2 * kv_dim)
    mlp = 2 * h * f + f + h
    return L * (attn + mlp + 4 * h) + 2 * h + V * h * (1 if tied else 2)


def test_starcoder2_15b_is_gqa_with_an_untied_head():
    m = model("starcoder2-15b")
    assert (m.heads, m.kv_heads, m.tied_embeddings, m.position_embedding) == (48, 4, False,
                                                                              "rope")
    assert m.params == starcoder2_params(40, 6144, 49152, 24576, 4 * 128, tied=False)


def test_starcoder2_7b_slides_a_window_on_every_layer_and_ties_its_head():
    m = model("starcoder2-7b")
    assert (m.attention_window, m.window_layers) == (4096, 32)
    # no tie_word_embeddings in the file: Starcoder2Config's default (true)
    assert m.tied_embeddings
    assert m.params == starcoder2_params(32, 4608, 49152, 18432, 4 * 128, tied=True) \
        == 7_173_923_840
    # arXiv:2402.19173 names it 7B: 7.17e9 rounds to it
    assert round(m.params / 1e9) == 7
    # windows of 4,096 of 8,192 keys: fewer score FLOPs than full attention
    full = m.with_(attention_window=0, window_layers=0)
    assert m.flops_per_token() < full.flops_per_token()


def test_starcoder2_use_bias_false_keeps_the_layernorm_biases():
    m = hf.model_from_config(dict(load("starcoder2-15b"), use_bias=False))[0]
    assert m.biases == "none" and m.norm == "layernorm"
    biases = (2 * 6144 + 2 * 512) + 24576 + 6144
    assert model("starcoder2-15b").params - m.params == 40 * biases


# ---------------------------------------------------------------------------- GPT-NeoX

def neox_params(L, h, V, f, tied=False):
    """GPT-NeoX by hand: query_key_value h -> 3h and dense, dense_h_to_4h and dense_4h_to_h,
    all with biases; input_layernorm and post_attention_layernorm (2h each) whether the
    residual is parallel or not; final_layer_norm; embed_in and embed_out (untied)."""
    attn = 3 * h * h + 3 * h + h * h + h
    mlp = 2 * h * f + f + h
    return L * (attn + mlp + 4 * h) + 2 * h + V * h * (1 if tied else 2)


def test_pythia_12b_is_its_model_card_and_table_1_of_the_paper():
    m = model("pythia-12b")
    # the model card's total
    assert m.params == neox_params(36, 5120, 50688, 20480) == 11_846_072_320
    # the paper's Table 1 (non-embedding): everything but embed_in and embed_out
    assert m.params - 2 * 50688 * 5120 == 11_327_027_200
    assert not m.tied_embeddings and m.norms_per_layer == 2 and m.position_embedding == "rope"


def test_gpt_neox_20b_is_the_model_card_count():
    assert model("gpt-neox-20b").params == neox_params(44, 6144, 50432, 24576) \
        == 20_554_567_680


def test_gpt_neox_parallel_residual_is_read_and_changes_no_count():
    c = load("pythia-12b")
    assert hf.config_fields(c)["use_parallel_residual"] is True
    serial = hf.model_from_config(dict(c, use_parallel_residual=False))[0]
    assert serial == model("pythia-12b")
    # tied embeddings, when a config asks for them, drop embed_out
    tied = hf.model_from_config(dict(c, tie_word_embeddings=True))[0]
    assert model("pythia-12b").params - tied.params == 50688 * 5120


def test_gpt_neox_rotary_fraction():
    c = load("gpt-neox-20b")
    assert hf.config_fields(c)["rotary_pct"] == 0.25
    nope = hf.model_from_config(dict(c, rotary_pct=0))[0]
    assert nope.position_embedding == "none" and nope.params == model("gpt-neox-20b").params
    renamed = {k: v for k, v in c.items() if k != "rotary_pct"}
    renamed["partial_rotary_factor"] = 0.0
    assert hf.model_from_config(renamed)[0].position_embedding == "none"
    e = one_line_error(hf.model_from_config, dict(c, rotary_pct=1.5))
    assert e.param == "rotary_pct"
    e = one_line_error(hf.model_from_config, dict(c, attention_bias=False))
    assert e.param == "attention_bias" and "not modelled" in str(e)


# ---------------------------------------------------------------------------- OLMo, OLMo 2

def olmo_params(L, h, V, f, kv_dim, layer_norms, final_norm):
    """OLMo/OLMo 2 by hand: q, k, v, o without biases, SwiGLU (3 h f), the layer's norm
    weights, final norm, untied embed_tokens and lm_head."""
    return L * (2 * h * h + 2 * h * kv_dim + 3 * h * f + layer_norms) + final_norm + 2 * V * h


def test_olmo_7b_layernorms_have_no_weights():
    m = model("olmo-7b")
    exact = olmo_params(32, 4096, 50304, 11008, 4096, layer_norms=0, final_norm=0)
    assert exact == 6_888_095_744
    # OlmoLayerNorm has no parameters: none in the layers; ModelSpec's final norm counts h
    assert m.norms_per_layer == 0 and m.params == exact + 4096
    assert not m.tied_embeddings and m.biases == "none" and m.gated_ffn
    # OLMo-7B is named 7B: 6.89e9 rounds to it
    assert round(m.params / 1e9) == 7


def test_olmo2_norms_after_attention_and_mlp_and_on_q_and_k():
    m = model("olmo2-7b")
    h, L, a, kv, d = 4096, 32, 32, 32, 128
    # post_attention_layernorm, post_feedforward_layernorm (h each), q_norm over a d and
    # k_norm over kv d (RMSNorm), final RMSNorm (h)
    exact = olmo_params(L, h, 100352, 11008, kv * d, layer_norms=2 * h + (a + kv) * d,
                        final_norm=h)
    assert exact == 7_298_617_344
    # ModelSpec's qk_norm counts 2 d per layer (per-head norms, Qwen3): (a + kv - 2) d fewer
    assert m.qk_norm and m.norm == "rmsnorm"
    assert exact - m.params == L * (a + kv - 2) * d == 253_952
    assert (exact - m.params) / exact < 1e-4


def test_olmo2_32b_is_gqa():
    m = model("olmo2-32b")
    h, L, a, kv, d = 5120, 64, 40, 8, 128
    exact = olmo_params(L, h, 100352, 27648, kv * d, layer_norms=2 * h + (a + kv) * d,
                        final_norm=h)
    assert m.kv_heads == 8 and exact == 32_234_279_936
    assert exact - m.params == L * (a + kv - 2) * d


def test_olmo_attention_bias_is_refused():
    for name in ("olmo-7b", "olmo2-7b"):
        e = one_line_error(hf.model_from_config, dict(load(name), attention_bias=True))
        assert e.param == "attention_bias" and "not modelled" in str(e)


# ---------------------------------------------------------------------------- all families

NEW = {"santacoder-1.1b": "GPTBigCodeForCausalLM", "starcoderbase-15.5b": "GPTBigCodeForCausalLM",
       "starcoder2-7b": "Starcoder2ForCausalLM", "starcoder2-15b": "Starcoder2ForCausalLM",
       "pythia-12b": "GPTNeoXForCausalLM", "gpt-neox-20b": "GPTNeoXForCausalLM",
       "olmo-7b": "OlmoForCausalLM", "olmo2-7b": "Olmo2ForCausalLM",
       "olmo2-32b": "Olmo2ForCausalLM"}


#: a size each family's reader needs (the shared tests: test_hf_config_families2.py)
MISSING = [("santacoder-1.1b", "n_embd"), ("starcoder2-15b", "intermediate_size"),
           ("pythia-12b", "hidden_size"), ("olmo2-7b", "vocab_size")]
#: the family names the supported-architectures message must carry
FAMILIES = ("gpt_bigcode", "starcoder2", "gpt_neox", "olmo", "olmo2")

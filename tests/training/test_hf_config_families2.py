"""Hugging Face configs of Gemma 2, Gemma 3 (text, and the Gemma3ForConditionalGeneration
wrapper's text_config), Phi-3/Phi-4 and OLMo 3: published parameter counts, each family's layout
counted by hand from its transformers modelling code, the sliding-window layers each
configuration class marks, and one command-line review per config. Configs are transcriptions
listed in tests/data/hf_configs/SOURCES.csv; the link round trip and the sources check of
tests/training/test_hf_config.py cover these files too."""

import json
import math
from pathlib import Path

import pytest
import test_hf_config_families as first
from cli.test_cli_robust import run_cli
from test_hf_config import one_line_error
from test_hf_config_families import DATA, load, model

from llmcost.training import hf_config as hf
from llmcost.training.arch import ModelSpec

#: name -> (published total parameters, relative tolerance, source)
PUBLISHED = {
    "gemma-2-9b": (9_241_705_984, 1e-12,
                   "keras-hub gemma_presets.py, gemma2_9b_en params 9241705984 (Gemma 2, "
                   "arXiv:2408.00118, names it 9B)"),
    "gemma-3-1b": (999_885_952, 1e-12, "keras-hub gemma3_presets.py, gemma3_1b params 999885952"),
    "phi-3-mini-4k": (3_821_079_552, 1e-12,
                      "keras-hub phi3_presets.py, phi3_mini_4k_instruct_en params 3821079552 "
                      "(Phi-3 report, arXiv:2404.14219: 3.8B)"),
    "phi-4": (14_659_507_200, 1e-12,
              "microsoft/phi-4 GGUF general.parameter_count 14659507200 (quoted in the stored "
              "index); Phi-4 report, arXiv:2412.08905, names it 14B"),
    "olmo-3-7b": (7_298_011_136, 1e-4,
                  "Olmo 3 7B as loaded: num_params 7298011136 (OLMo-core MFUCallback log quoted "
                  "in the stored index); named 7B"),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_config_reproduces_published_parameter_counts(name):
    total, tol, _source = PUBLISHED[name]
    assert model(name).params == pytest.approx(total, rel=tol)


# ---------------------------------------------------------------------------- Gemma 2, Gemma 3

def gemma_params(L, h, V, f, a, kv, d, qk_norm):
    """Gemma 2/3 by hand: q (h -> a d), k and v (h -> kv d), o (a d -> h) without biases; gate,
    up and down of the GeGLU MLP; input, post-attention, pre- and post-feedforward RMSNorms
    (h each); Gemma 3's q_norm and k_norm over head_dim; final norm; embed_tokens tied to
    lm_head (the sqrt(h) embedding scale is a buffer, not a parameter)."""
    attn = 2 * h * a * d + 2 * h * kv * d + (2 * d if qk_norm else 0)
    return L * (attn + 3 * h * f + 4 * h) + h + V * h


def test_gemma2_9b_has_its_own_head_dim_four_norms_and_a_tied_head():
    m = model("gemma-2-9b")
    # 16 heads of 256 = 4096 wide attention on a 3584 wide model
    assert (m.heads, m.kv_heads, m.head_dim, m.hidden) == (16, 8, 256, 3584)
    assert m.norms_per_layer == 4 and m.norm == "rmsnorm" and not m.qk_norm
    assert m.tied_embeddings and m.gated_ffn and m.biases == "none"
    assert m.params == gemma_params(42, 3584, 256000, 14336, 16, 8, 256, qk_norm=False) \
        == 9_241_705_984


def test_gemma2_slides_a_window_on_every_other_layer():
    m = model("gemma-2-9b")
    # Gemma2Config's layer_types: sliding_attention on layers 0, 2, ..., 40 (21 of 42)
    assert (m.attention_window, m.window_layers) == (4096, 21)
    types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(42)]
    assert hf.model_from_config(dict(load("gemma-2-9b"), layer_types=types))[0] == m
    # no sliding_window key: Gemma2Config's 4096; an explicit null: full attention everywhere
    c = {k: v for k, v in load("gemma-2-9b").items() if k != "sliding_window"}
    assert hf.model_from_config(c)[0] == m
    full = hf.model_from_config(dict(c, sliding_window=None))[0]
    assert (full.attention_window, full.window_layers) == (0, 0)
    assert full.params == m.params
    # windows of 4,096 of 8,192 keys on half the layers: fewer attention FLOPs
    assert m.flops_per_token() < full.flops_per_token()


def test_gemma2_softcapping_and_query_scalar_change_no_count():
    c = load("gemma-2-9b")
    changed = dict(c, attn_logit_softcapping=None, final_logit_softcapping=None,
                   query_pre_attn_scalar=144)
    assert hf.model_from_config(changed)[0] == model("gemma-2-9b")
    assert "query_pre_attn_scalar" not in hf.config_fields(c)


def test_gemma3_1b_adds_per_head_qk_norm_and_a_five_to_one_window_pattern():
    m = model("gemma-3-1b")
    assert m.qk_norm and m.norms_per_layer == 4 and m.tied_embeddings
    assert (m.heads, m.kv_heads, m.head_dim) == (4, 1, 256)
    # q_norm and k_norm normalise each head over head_dim: 2 x 256 per layer, exactly
    assert m.params == gemma_params(26, 1152, 262144, 6912, 4, 1, 256, qk_norm=True) \
        == 999_885_952
    # sliding_window_pattern 6: full attention on layers 5, 11, 17, 23; the rest slide over 512
    assert (m.attention_window, m.window_layers) == (512, 22)
    types = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(26)]
    assert hf.model_from_config(dict(load("gemma-3-1b"), layer_types=types))[0] == m
    c = {k: v for k, v in load("gemma-3-1b").items() if k != "sliding_window_pattern"}
    assert hf.model_from_config(c)[0] == m
    assert hf.model_from_config(dict(c, sliding_window_pattern=2))[0].window_layers == 13


def test_gemma3_27b_wrapper_reads_text_config_and_says_the_vision_tower_is_not_counted():
    m, warnings = hf.model_from_config(load("gemma-3-27b-it"))
    assert m.name == "Gemma3ForConditionalGeneration"
    assert any("vision tower" in w and "not" in w for w in warnings)
    # text_config has no vocab_size: Gemma3TextConfig's 262,208
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.vocab) == (
        62, 5376, 32, 16, 128, 262208)
    # 5:1 local:global, 1,024-token windows: 52 sliding and 10 global layers
    assert (m.attention_window, m.window_layers) == (1024, 52)
    exact = gemma_params(62, 5376, 262208, 21504, 32, 16, 128, qk_norm=True)
    assert m.params == exact == 27_009_346_304
    # keras-hub's gemma3_27b_text, 27,009,002,240, keeps 262,144 of the 262,208 rows
    assert m.params - 64 * 5376 == 27_009_002_240
    # with its SigLIP tower and projector, the multimodal checkpoint: 27,432,406,640
    # (keras-hub medgemma_instruct_27b, the same architecture; gemma-3-27b-it in the index)
    assert m.params + siglip_params() + 1152 * 5376 + 1152 == 27_432_406_640


def siglip_params(width=1152, layers=27, ffn=4304, image=896, patch=14):
    """Gemma 3's SigLIP vision tower by hand: patch convolution with bias, (896/14)^2 learned
    positions, per layer q, k, v, o and fc1, fc2 with biases and two LayerNorms, a final
    LayerNorm (vision_use_head false: no pooling head)."""
    per_layer = 4 * (width * width + width) + 2 * width * ffn + ffn + width + 4 * width
    embed = 3 * patch * patch * width + width + (image // patch) ** 2 * width
    return embed + layers * per_layer + 2 * width


def test_gemma3_text_model_alone_reads_as_the_wrapper():
    wrapped = load("gemma-3-27b-it")
    text = dict(wrapped["text_config"], architectures=["Gemma3ForCausalLM"])
    alone, warnings = hf.model_from_config(text)
    assert alone.params == model("gemma-3-27b-it").params
    assert alone.name == "Gemma3ForCausalLM" and not any("vision" in w for w in warnings)


def test_gemma3_wrapper_link_fields_are_under_text_config():
    c = load("gemma-3-27b-it")
    fields = hf.config_fields(c)
    assert fields["text_config.hidden_size"] == 5376 and "hidden_size" not in fields
    assert not any(k.startswith("vision_config") for k in fields)
    query = {"cfg." + k: str(x) for k, x in fields.items()}
    assert hf.model_from_config(hf.fields_from_query(query))[0] == model("gemma-3-27b-it")


def test_gemma3_wrapper_without_text_config_is_refused():
    c = {k: v for k, v in load("gemma-3-27b-it").items() if k != "text_config"}
    e = one_line_error(hf.model_from_config, c)
    assert e.param == "text_config" and "missing" in str(e)
    e = one_line_error(hf.model_from_config, dict(c, text_config="gemma3_text"))
    assert e.param == "text_config" and "object" in str(e)
    c = load("gemma-3-27b-it")
    del c["text_config"]["intermediate_size"]
    e = one_line_error(hf.model_from_config, c)
    assert e.param == "text_config.intermediate_size" and "missing" in str(e)


def test_gemma_attention_bias_is_refused():
    e = one_line_error(hf.model_from_config, dict(load("gemma-2-9b"), attention_bias=True))
    assert e.param == "attention_bias" and "not modelled" in str(e)
    c = load("gemma-3-27b-it")
    c["text_config"]["attention_bias"] = True
    e = one_line_error(hf.model_from_config, c)
    assert e.param == "text_config.attention_bias"


# ---------------------------------------------------------------------------- Phi-3, Phi-4

def phi3_params(L, h, V, f, kv_dim, tied=False):
    """Phi3ForCausalLM by hand: qkv_proj h -> h + 2 kv_dim and o_proj, gate_up_proj h -> 2 f
    and down_proj, all without biases; input and post-attention RMSNorms; final norm;
    embed_tokens and lm_head (untied)."""
    return L * (h * (h + 2 * kv_dim) + h * h + 3 * h * f + 2 * h) + h + V * h * (1 if tied
                                                                                 else 2)


def test_phi3_mini_fused_projections_count_as_separate_ones():
    m = model("phi-3-mini-4k")
    assert m.params == phi3_params(32, 3072, 32064, 8192, 3072) == 3_821_079_552
    assert not m.tied_embeddings and m.biases == "none" and m.norms_per_layer == 2
    assert m.seq_len == 4096 and not m.qk_norm


def test_phi3_sliding_window_covers_every_layer_as_the_mistral_mask_does():
    m = model("phi-3-mini-4k")
    # Phi3Attention passes config.sliding_window to every layer; 2,047 of 4,096 keys
    assert (m.attention_window, m.window_layers) == (2047, 32)
    full = hf.model_from_config(dict(load("phi-3-mini-4k"), sliding_window=None))[0]
    assert (full.attention_window, full.window_layers) == (0, 0)
    assert m.flops_per_token() < full.flops_per_token()


def test_phi3_builds_no_bias_whatever_attention_bias_says():
    c = dict(load("phi-3-mini-4k"), attention_bias=True)
    assert hf.model_from_config(c)[0] == model("phi-3-mini-4k")


def test_phi4_is_gqa_without_a_window():
    m = model("phi-4")
    assert (m.heads, m.kv_heads, m.head_dim) == (40, 10, 128)
    assert (m.attention_window, m.window_layers) == (0, 0)
    assert m.params == phi3_params(40, 5120, 100352, 17920, 10 * 128) == 14_659_507_200
    # tied embeddings, when a config asks for them (Phi-4-mini), drop lm_head
    tied = hf.model_from_config(dict(load("phi-4"), tie_word_embeddings=True))[0]
    assert m.params - tied.params == 100352 * 5120


# ---------------------------------------------------------------------------- OLMo 3

def test_olmo3_is_olmo2_with_sliding_windows_on_three_of_four_layers():
    m = model("olmo-3-7b")
    h, L, a, kv, d, f, V = 4096, 32, 32, 32, 128, 11008, 100278
    # OLMo 2's layout: post-attention and post-feedforward RMSNorms, q_norm over a d and
    # k_norm over kv d, final norm, untied embeddings
    exact = L * (2 * h * h + 2 * h * kv * d + 3 * h * f + 2 * h + (a + kv) * d) + h + 2 * V * h
    assert exact == 7_298_011_136
    assert m.qk_norm and not m.tied_embeddings and m.biases == "none"
    assert exact - m.params == L * (a + kv - 2) * d == 253_952
    # Olmo3Config's layer_types: full attention on layers 3, 7, ..., 31; windows of 4,096
    assert (m.attention_window, m.window_layers) == (4096, 24)
    types = ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(L)]
    assert hf.model_from_config(dict(load("olmo-3-7b"), layer_types=types))[0] == m
    # a layer_types of the config's own is followed as given
    half = dict(load("olmo-3-7b"), layer_types=["sliding_attention", "full_attention"] * 16)
    assert hf.model_from_config(half)[0].window_layers == 16


def test_olmo3_layer_types_must_cover_every_layer():
    c = dict(load("olmo-3-7b"), layer_types=["sliding_attention"] * 3)
    e = one_line_error(hf.model_from_config, c)
    assert e.param == "layer_types" and "3 entries for 32 layers" in str(e)


# ---------------------------------------------------------------------------- all families

NEW = {"gemma-2-9b": "Gemma2ForCausalLM", "gemma-3-1b": "Gemma3ForCausalLM",
       "gemma-3-27b-it": "Gemma3ForConditionalGeneration", "phi-3-mini-4k": "Phi3ForCausalLM",
       "phi-4": "Phi3ForCausalLM", "olmo-3-7b": "Olmo3ForCausalLM"}


#: a size each family's reader needs, for the shared missing-field test
#: (test_hf_config_families.test_missing_sizes_name_the_field)
MISSING = [("gemma-2-9b", "hidden_size"), ("gemma-3-1b", "num_hidden_layers"),
           ("phi-4", "vocab_size"), ("olmo-3-7b", "intermediate_size")]
#: the family names the supported-architectures message must carry
FAMILIES = ("gemma2", "gemma3_text", "gemma3", "phi3", "olmo3")


@pytest.mark.parametrize("name", sorted(NEW))
def test_review_on_the_command_line(name):
    code, out, err = run_cli(["review", "--model-config", str(DATA / f"{name}.json"),
                              "--query", "gpu=h100-sxm&gpus=64&tokens=1e12", "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["model"] == "config" and r["gpu"] == "h100-sxm" and r["gpus"] == 64
    assert math.isfinite(r["gpu_hours"]) and r["gpu_hours"] > 0
    assert r["fits"] in (True, False)
    if name == "gemma-3-27b-it":
        assert any("vision tower" in w for w in r["warnings"])


# ------------------------------------------------------------------ every added family alike

#: the families added since the catalog's own: test_hf_config_families.py's and this file's
ADDED = {**first.NEW, **NEW}


@pytest.mark.parametrize("name", sorted(ADDED))
def test_link_round_trip_and_model_type_fallback(name):
    c = load(name)
    fields = hf.config_fields(c)
    assert set(fields) <= set(hf.FIELD_KINDS)
    query = {"cfg." + k: str(x) for k, x in fields.items()}
    again, _ = hf.model_from_config(hf.fields_from_query(query))
    assert again == model(name) and again.name == ADDED[name]
    # an unknown head class of the same model_type reads the same, with a warning
    m, warnings = hf.model_from_config(dict(c, architectures=["SomethingForSequenceClassification"]))
    assert m.params == model(name).params and "not recognised" in warnings[0]


def test_the_added_families_are_read_by_their_own_readers():
    # listed, so never read generically (the generic reading names itself in a warning)
    for fam in first.FAMILIES + FAMILIES:
        assert fam in hf.SUPPORTED
    for name in ADDED:
        _, warnings = hf.model_from_config(load(name))
        assert not any("read generically" in w for w in warnings), name


@pytest.mark.parametrize("name, key", first.MISSING + MISSING)
def test_missing_sizes_name_the_field(name, key):
    c = load(name)
    del c[key]
    e = one_line_error(hf.model_from_config, c)
    assert e.param == key and "missing" in str(e)

"""Models from a Hugging Face config.json: published parameter counts, the catalog, link round
trips, bad input. Configs are transcriptions listed in tests/data/hf_configs/SOURCES.csv."""

import csv
import json
from pathlib import Path

import pytest

from llmcost import InputError, catalog
from llmcost.training import flops as fl
from llmcost.training import hf_config as hf
from llmcost.training.arch import ModelSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
CAT = catalog.default()


def load(name: str) -> dict:
    return hf.read_config((DATA / f"{name}.json").read_bytes(), name=f"{name}.json")


def model(name: str, **kw) -> ModelSpec:
    return hf.model_from_config(load(name), **kw)[0]


#: name -> (published total, published active or None, relative tolerance, source)
PUBLISHED = {
    "llama3.1-8b": (8.03e9, None, 0.02, "Hugging Face meta-llama/Llama-3.1-8B: 8.03B params"),
    "llama3.1-70b": (70.6e9, None, 0.02, "Hugging Face meta-llama/Llama-3.1-70B: 70.6B params"),
    "llama3.1-405b": (405.9e9, None, 0.02, "Hugging Face meta-llama/Llama-3.1-405B: 405.9B params"),
    "mistral-7b-v0.1": (7.24e9, None, 0.02, "Hugging Face mistralai/Mistral-7B-v0.1: 7.24B params"),
    "mixtral-8x7b": (46.7e9, 12.9e9, 0.02,
                     "Mistral AI, 'Mixtral of experts' (2023-12): 46.7B total, 12.9B per token"),
    "qwen2.5-7b": (7.61e9, None, 0.02, "Qwen2.5-7B model card: 7.61B parameters"),
    "qwen3-8b": (8.2e9, None, 0.02, "Qwen3-8B model card: 8.2B parameters"),
    "qwen3-30b-a3b": (30.5e9, 3.3e9, 0.02, "Qwen3-30B-A3B model card: 30.5B total, 3.3B activated"),
    "qwen3-235b-a22b": (235e9, 22e9, 0.02, "Qwen3 report arXiv:2505.09388 Table 2: 235B, 22B"),
    "deepseek-v3": (671e9, 37e9, 0.02, "DeepSeek-V3 report arXiv:2412.19437 §4.2: 671B, 37B"),
    "deepseek-v2-lite": (15.7e9, None, 0.02, "DeepSeek-V2-Lite model card: 15.7B total"),
    "gpt-oss-120b": (116.83e9, 5.13e9, 0.02, "gpt-oss model card arXiv:2508.10925 Table 1"),
    "falcon-7b": (7e9, None, 0.02, "tiiuae/falcon-7b model card: 7B parameters"),
    "mpt-7b": (6.7e9, None, 0.02, "mosaicml/mpt-7b model card: n_parameters 6.7B"),
    "bloom-176b": (176.247271424e9, None, 1e-12, "bigscience/bloom model card: 176,247,271,424"),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_config_reproduces_published_parameter_counts(name):
    total, active, tol, _source = PUBLISHED[name]
    m = model(name)
    assert m.params == pytest.approx(total, rel=tol)
    if active is not None:
        assert m.active_params == pytest.approx(active, rel=tol)


def test_qwen_non_embedding_counts_match_their_model_cards():
    # model cards: Qwen2.5-7B 6.53B non-embedding, Qwen3-8B 6.95B, Qwen3-30B-A3B 29.9B
    for name, non_emb in (("qwen2.5-7b", 6.53e9), ("qwen3-8b", 6.95e9), ("qwen3-30b-a3b", 29.9e9)):
        m = model(name)
        body = m.params - m.embedding_params - m.output_params * (0 if m.tied_embeddings else 1)
        assert body == pytest.approx(non_emb, rel=0.005)


def test_deepseek_v3_mtp_module_is_reported_apart_from_the_main_model():
    m, warnings = hf.model_from_config(load("deepseek-v3"))
    assert m.mtp_layers == 1 and m.params == pytest.approx(671e9, rel=0.02)
    # README_WEIGHTS.md of deepseek-ai/DeepSeek-V3: 671B main + 14B MTP module = 685B, where
    # the 14B counts the shared embedding and output head again (2 x 129280 x 7168 = 1.85B)
    assert m.mtp_params + 2 * 129280 * 7168 == pytest.approx(14e9, rel=0.05)
    assert any("num_nextn_predict_layers" in w for w in warnings)


def test_falcon_7b_is_the_hand_count_of_its_shared_norm_multi_query_layout():
    h, L, V, a, d = 4544, 32, 65024, 71, 64
    # fused QKV with one KV head, output projection, 4h GELU MLP, one LayerNorm (parallel
    # attention), no linear biases; final LayerNorm; tied embedding
    per_layer = h * (a + 2) * d + h * h + 2 * h * 4 * h + 2 * h
    assert model("falcon-7b").params == L * per_layer + 2 * h + V * h == 6_921_720_704


def test_falcon_40b_matches_its_checkpoint_index():
    # Decentralised-AI/falcon-40b pytorch_model.bin.index.json: total_size 83,671,941,120
    # bytes of bf16 = 41,835,970,560 stored values, the tied lm_head stored once more (V h)
    stored = 83_671_941_120 // 2
    m = model("falcon-40b")
    assert m.norms_per_layer == 2 and m.kv_heads == 8 and m.tied_embeddings
    assert m.params == stored - 65024 * 8192
    # published as "40B", a rounded name: the count is 41.3B
    assert round(m.params / 1e10) == 4


def test_falcon_names_old_and_new_read_the_same():
    rw7 = {"architectures": ["RWForCausalLM"], "model_type": "RefinedWebModel", "n_layer": 32,
           "n_head": 71, "hidden_size": 4544, "vocab_size": 65024, "multi_query": True,
           "parallel_attn": True, "bias": False}
    assert hf.model_from_config(rw7)[0].params == model("falcon-7b").params
    new40 = {"architectures": ["FalconForCausalLM"], "model_type": "falcon",
             "num_hidden_layers": 60, "num_attention_heads": 128, "num_kv_heads": 8,
             "hidden_size": 8192, "vocab_size": 65024, "new_decoder_architecture": True,
             "parallel_attn": True, "bias": False}
    assert hf.model_from_config(new40)[0].params == model("falcon-40b").params
    alibi = dict(load("falcon-7b"), alibi=True)
    m = hf.model_from_config(alibi)[0]
    assert m.position_embedding == "alibi" and m.params == model("falcon-7b").params


def test_mpt_7b_counts_bias_free_layernorms_and_no_position_table():
    h, L, V = 4096, 32, 50432
    # no_bias removes every bias, the LayerNorms' too; ALiBi: MPTModel builds no wpe
    per_layer = 4 * h * h + 2 * h * 4 * h + 2 * h
    m = model("mpt-7b")
    assert m.norm == "layernorm_nobias" and m.position_embedding == "alibi"
    assert m.params == L * per_layer + h + V * h == 6_649_286_656


def test_mpt_attention_and_ffn_variants():
    base = load("mpt-7b")
    gqa = dict(base, attn_config={"alibi": True, "attn_type": "grouped_query_attention",
                                  "kv_n_heads": 8})
    m = hf.model_from_config(gqa)[0]
    # K and V shrink from 32 to 8 heads: 2 (h - h/4) h fewer weights per layer
    assert model("mpt-7b").params - m.params == 32 * 2 * (4096 - 1024) * 4096
    glu = dict(base, ffn_config={"ffn_type": "mptglu", "ffn_hidden_size": 10944})
    assert hf.model_from_config(glu)[0].ffn_hidden == 10944
    learned = dict(base, attn_config={"alibi": False})
    m = hf.model_from_config(learned, seq_len=2048)[0]
    assert m.params - model("mpt-7b").params == 2048 * 4096


def test_bloom_adds_the_embedding_layernorm():
    m = model("bloom-176b")
    assert m.embedding_norm and m.position_embedding == "alibi"
    # model card: 3,596,615,680 embedding parameters = 250,880 x 14,336
    assert m.vocab * m.hidden == 3_596_615_680
    assert m.params == 176_247_271_424
    assert m.embedding_params == 3_596_615_680 + 2 * 14336


def test_smollm3_3b_is_a_three_billion_model_by_hand_count():
    h, L, V, f, kv_dim = 2048, 36, 128256, 11008, 4 * 128
    per_layer = 2 * h * h + 2 * h * kv_dim + 3 * h * f + 2 * h
    m = model("smollm3-3b")
    assert m.tied_embeddings and m.params == L * per_layer + h + V * h
    # published as a "3B model" (blog, 2025-07): 3.08B rounds to it
    assert round(m.params / 1e9) == 3


def test_gpt_oss_windows_and_sinks_as_the_catalog_row():
    m = model("gpt-oss-120b")
    assert (m.attention_window, m.window_layers, m.attention_sinks) == (128, 18, True)
    assert m.active_params_counts == "head" and m.moe_expert_biases and m.moe_router_bias


#: catalog ids whose rows describe the same architectures as these configs
SAME_AS_CATALOG = {"llama3.1-8b": "llama3-8b", "llama3.1-70b": "llama3-70b",
                   "llama3.1-405b": "llama3-405b", "mistral-7b-v0.1": "mistral-7b",
                   "qwen2.5-7b": "qwen2.5-7b", "mixtral-8x7b": "mixtral-8x7b",
                   "qwen3-30b-a3b": "qwen3-30b-a3b", "qwen3-235b-a22b": "qwen3-235b-a22b",
                   "deepseek-v3": "deepseek-v3", "gpt-oss-120b": "gpt-oss-120b"}


@pytest.mark.parametrize("name", sorted(SAME_AS_CATALOG))
def test_config_equal_to_a_catalog_architecture_gives_its_counts(name):
    row = CAT.model(SAME_AS_CATALOG[name])
    m = model(name, seq_len=row.seq_len)
    assert (m.params, m.active_params, m.mtp_params) == (row.params, row.active_params,
                                                         row.mtp_params)
    if not m.attention_window:
        assert m.flops_per_token() == pytest.approx(row.flops_per_token(), rel=1e-12)


CONFIGS = sorted(p.stem for p in DATA.glob("*.json"))


@pytest.mark.parametrize("name", CONFIGS)
def test_link_fields_round_trip_to_the_same_model(name):
    c = load(name)
    fields = hf.config_fields(c)
    query = {"cfg." + k: str(x) for k, x in fields.items()}
    assert hf.model_from_config(hf.fields_from_query(query)) == hf.model_from_config(c)


def test_link_fields_are_flat_and_only_what_is_read():
    fields = hf.config_fields(load("mpt-7b"))
    assert fields["attn_config.alibi"] is True and "attn_config" not in fields
    assert "tokenizer_name" not in fields and "init_device" not in fields
    assert all(not isinstance(x, dict) for x in fields.values())
    assert set(fields) <= set(hf.FIELD_KINDS)


def test_fields_from_query_types_values_and_accepts_parse_qs_lists():
    got = hf.fields_from_query({"cfg.hidden_size": ["4096"], "cfg.tie_word_embeddings": "false",
                                "cfg.mlp_only_layers": "0,1", "cfg.head_dim": "null",
                                "cfg.layer_types": '["full_attention"]', "model": "x"})
    assert got == {"hidden_size": 4096, "tie_word_embeddings": False, "mlp_only_layers": [0, 1],
                   "head_dim": None, "layer_types": ["full_attention"]}


@pytest.mark.parametrize("query, key", [
    ({"cfg.hidden_size": "40x96"}, "cfg.hidden_size"),
    ({"cfg.hidden_size": "4096.5"}, "cfg.hidden_size"),
    ({"cfg.tie_word_embeddings": "maybe"}, "cfg.tie_word_embeddings"),
    ({"cfg.mlp_only_layers": "[0, 'a']"}, "cfg.mlp_only_layers"),
    ({"cfg.mlp_only_layers": "[" * 50_000}, "cfg.mlp_only_layers"),
    ({"cfg.initializer_range": "0.02"}, "cfg.initializer_range"),
])
def test_fields_from_query_names_the_bad_key(query, key):
    with pytest.raises(InputError) as e:
        hf.fields_from_query(query)
    assert e.value.param == key and key in str(e.value) and "\n" not in str(e.value)


def test_qwen3_moe_mlp_only_layers_are_dense():
    c = dict(load("qwen3-30b-a3b"), mlp_only_layers=[0, 1])
    m = hf.model_from_config(c)[0]
    assert m.moe_layers == 46
    # two layers swap 128 experts of 768 (+ router) for one dense FFN of 6144
    h = 2048
    diff = 2 * (h * 128 + 128 * 3 * h * 768 - 3 * h * 6144)
    assert model("qwen3-30b-a3b").params - m.params == diff


def test_sequence_length_default_and_explicit():
    m, warnings = hf.model_from_config(load("llama3.1-8b"))
    assert m.seq_len == 8192 and any("max_position_embeddings 131072" in w for w in warnings)
    m, warnings = hf.model_from_config(load("mpt-7b"))
    assert m.seq_len == 2048
    m, warnings = hf.model_from_config(load("llama3.1-8b"), seq_len=4096, id="mine")
    assert (m.seq_len, m.id, m.name) == (4096, "mine", "LlamaForCausalLM") and warnings == []
    with pytest.raises(InputError) as e:
        hf.model_from_config(load("llama3.1-8b"), seq_len=0)
    assert e.value.param == "seq_len"


def test_alibi_and_norm_variants_are_named_choices():
    assert "alibi" in fl.POSITION_EMBEDDINGS and "layernorm_nobias" in fl.NORMS
    # one shared norm per layer takes one norm of 2h off each layer (LayerNorm with bias)
    small = ModelSpec(layers=4, hidden=64, heads=4, vocab=100, seq_len=16)
    two = fl.parameter_count(small.with_(position_embedding="alibi"))
    one = fl.parameter_count(small.with_(position_embedding="alibi", norms_per_layer=1))
    assert two - one == 4 * 2 * 64
    assert fl.parameter_count(small.with_(embedding_norm=True)) - fl.parameter_count(
        small) == 2 * 64


# ---------------------------------------------------------------------------- bad input

def one_line_error(call, *args, **kw) -> InputError:
    with pytest.raises(InputError) as e:
        call(*args, **kw)
    text = str(e.value)
    assert "\n" not in text and len(text) < 600
    return e.value


def test_an_unlisted_architecture_missing_a_size_names_the_field_and_its_aliases():
    # GPT2LMHeadModel is no listed family: it is read generically, and a config without the
    # layer count is refused naming every key that could give it
    e = one_line_error(hf.model_from_config, {"architectures": ["GPT2LMHeadModel"],
                                              "model_type": "gpt2", "n_embd": 768})
    assert e.param == "num_hidden_layers" and "GPT2LMHeadModel" in str(e)
    assert all(k in str(e) for k in ("n_layer", "num_layers", "read generically"))
    e = one_line_error(hf.model_from_config, {"model_type": "gpt2"})
    assert e.param == "num_hidden_layers" and "'gpt2'" not in str(e) and "gpt2" in str(e)


def test_unknown_architecture_with_a_known_model_type_is_read_with_a_warning():
    c = dict(load("llama3.1-8b"), architectures=["LlamaForSequenceClassification"])
    m, warnings = hf.model_from_config(c)
    assert m.params == model("llama3.1-8b").params and "not recognised" in warnings[0]


def test_a_2_mb_file_is_refused(tmp_path):
    big = b'{"pad": "' + b"x" * 2_000_000 + b'"}'
    e = one_line_error(hf.read_config, big)
    assert e.param == "model_config" and "2,000,011 bytes" in str(e)
    path = tmp_path / "config.json"
    path.write_bytes(big)
    assert "1 MB" in str(one_line_error(hf.read_config_file, path))


@pytest.mark.parametrize("text, words", [
    ("[1, 2]", "got an array"),
    ('"llama"', "got a string"),
    ('{"hidden_size": NaN}', "NaN"),
    ('{"hidden_size": Infinity}', "Infinity"),
    ('{"hidden_size": 1e999}', "float range"),
    ('{"hidden_size": 4096', "line 1"),
    ('{"a":' * 40 + "1" + "}" * 40, "deeper than 32"),
    ("[" * 200_000 + "]" * 200_000, "deeper than 32"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_bad_json_is_one_line(text, words):
    e = one_line_error(hf.read_config, text)
    assert e.param == "model_config" and words in str(e) and str(e).startswith("model_config:")


def test_nan_in_a_dict_is_refused():
    e = one_line_error(hf.read_config, {"hidden_size": float("nan")})
    assert e.param == "hidden_size"


def test_negative_hidden_size_names_the_field():
    e = one_line_error(hf.model_from_config, dict(load("llama3.1-8b"), hidden_size=-4096))
    assert e.param == "hidden_size" and "-4096" in str(e)


@pytest.mark.parametrize("field", ["intermediate_size", "num_hidden_layers", "vocab_size"])
def test_missing_required_field_names_it(field):
    c = load("llama3.1-8b")
    del c[field]
    e = one_line_error(hf.model_from_config, c)
    assert e.param == field and "missing" in str(e)


@pytest.mark.parametrize("change, field", [
    ({"hidden_size": "4096"}, "hidden_size"),
    ({"hidden_size": True}, "hidden_size"),
    ({"num_key_value_heads": 5}, "num_key_value_heads"),
    ({"tie_word_embeddings": "no"}, "tie_word_embeddings"),
    ({"attention_bias": True}, "attention_bias"),
    ({"hidden_size": 10 ** 9}, "hidden_size"),
    ({"num_hidden_layers": 9000, "hidden_size": 1 << 20, "intermediate_size": 4_000_000},
     "model_config"),
])
def test_bad_field_values_name_the_field(change, field):
    e = one_line_error(hf.model_from_config, dict(load("llama3.1-8b"), **change))
    assert e.param == field


def test_sources_list_every_config_with_its_origin():
    with open(DATA / "SOURCES.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["file"] for r in rows) == sorted(p.name for p in DATA.glob("*.json"))
    for r in rows:
        assert r["repository"] and r["path"] and (r["revision"] or r["page"]) and r["as_of"]
        json.loads((DATA / r["file"]).read_text())

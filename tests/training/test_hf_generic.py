"""Configs of families llmcost has no reader for, read generically (llmcost.training.hf_generic):
published parameter counts of InternLM2.5, Stable LM 2 and ChatGLM3, a tolerance that a wrong
FFN, key/value-head or tying assumption would break, hand counts of what each inference gives,
the note naming every assumption, the refusals (encoder-decoder, masked LM, a missing size) and
the link round trip. Configs are transcriptions listed in tests/data/hf_configs/SOURCES.csv."""

import pytest
from test_hf_config import one_line_error
from test_hf_config_families import load, model

from llmcost.training import hf_config as hf
from llmcost.training import hf_generic as gen

#: name -> (published total parameters, source)
PUBLISHED = {
    "internlm2.5-7b": (7_737_708_544,
                       "floschne/gimmick src/gimmick/models/__init__.py: internlm/internlm2_5-7b-"
                       "chat 7737708544, the safetensors metadata's parameter_count"),
    "stablelm-2-1.6b": (1_644_417_024,
                        "stabilityai/stablelm-2-1_6b model card, Model Architecture table: "
                        "Parameters 1,644,417,024"),
    "chatglm3-6b": (6_243_584_000,
                    "MrYxJ/calculate-flops.pytorch README.md: chatglm2-6b 6243584000 (ChatGLM3-6B "
                    "keeps ChatGLM2-6B's architecture)"),
}
#: relative tolerance: below each wrong assumption's effect (test_a_wrong_assumption_...)
TOL = 0.005
#: the architectures the samples name (none in hf_config.SUPPORTED)
GENERIC = {"internlm2.5-7b": "InternLM2ForCausalLM", "stablelm-2-1.6b": "StableLmForCausalLM",
           "chatglm3-6b": "ChatGLMModel", "qwen-1.8b": "QWenLMHeadModel",
           "nemotron-4-4b": "NemotronForCausalLM"}


def bare(**fields) -> dict:
    """A config of an unlisted architecture with the four required sizes."""
    return dict({"architectures": ["BareForCausalLM"], "hidden_size": 64,
                 "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}, **fields)


def note(config) -> str:
    _, warnings = hf.model_from_config(config)
    return next(w for w in warnings if "read generically" in w)


# ---------------------------------------------------------------------------- published counts

@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_unlisted_families_reproduce_their_published_counts(name):
    total, _source = PUBLISHED[name]
    m, warnings = hf.model_from_config(load(name))
    assert m.params == pytest.approx(total, rel=TOL)
    assert any(w.startswith(f"{GENERIC[name]} is not a family llmcost lists: read generically")
               for w in warnings)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_a_wrong_assumption_would_miss_the_published_count(name):
    # the tolerance is honest: each assumption the generic reading makes, taken the other
    # way, moves the count out of it (untied vs tied embeddings, 2 vs 3 FFN matrices, all
    # heads vs the config's key/value groups)
    total, _ = PUBLISHED[name]
    m = model(name)
    wrong = [m.with_(tied_embeddings=not m.tied_embeddings), m.with_(gated_ffn=not m.gated_ffn)]
    if m.kv_heads != m.heads:
        wrong.append(m.with_(kv_heads=m.heads))
    for w in wrong:
        assert abs(w.params / total - 1) > TOL


def test_internlm2_5_is_the_llama_hand_count():
    # InternLM2: wqkv (a + 2 kv) d h, wo h^2, w1/w3/w2 3 h f, two RMSNorms; untied
    h, L, a, kv, d, f, V = 4096, 32, 32, 8, 128, 14336, 92544
    per_layer = h * (a + 2 * kv) * d + h * h + 3 * h * f + 2 * h
    assert model("internlm2.5-7b").params == L * per_layer + h + 2 * V * h == 7_737_708_544


def test_chatglm_reads_its_own_names():
    # num_layers, ffn_hidden_size, kv_channels, multi_query_group_num (with
    # multi_query_attention), padded_vocab_size, seq_length; add_qkv_bias; no activation field:
    # LlamaConfig's silu, and ChatGLM's dense_h_to_4h is indeed 2 x 13696 wide (SwiGLU)
    m, warnings = hf.model_from_config(load("chatglm3-6b"))
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn_hidden, m.vocab) == \
        (28, 4096, 32, 2, 128, 13696, 65024)
    assert m.gated_ffn and m.biases == "qkv" and m.norm == "rmsnorm" and not m.tied_embeddings
    assert any("seq_len 8192 = min(seq_length 8192" in w for w in warnings)
    h, L, kv, d, f, V = 4096, 28, 2, 128, 13696, 65024
    per_layer = h * (h + 2 * kv * d) + (h + 2 * kv * d) + h * h + 3 * h * f + 2 * h
    assert m.params == L * per_layer + h + 2 * V * h == 6_243_584_000


def test_stablelm_2_layernorm_and_qkv_biases():
    m = model("stablelm-2-1.6b")
    assert m.norm == "layernorm" and m.biases == "qkv" and m.gated_ffn
    h, L, f, V = 2048, 24, 5632, 100352
    per_layer = 4 * h * h + 3 * h + 3 * h * f + 2 * 2 * h
    assert m.params == L * per_layer + 2 * h + 2 * V * h
    # the model card's 1,644,417,024 is 98,304 = 24 x 2 x 2048 below: within 0.006%
    assert m.params - PUBLISHED["stablelm-2-1.6b"][0] == 24 * 2 * 2048


def test_qwen_1_mlp_is_half_its_intermediate_size():
    # modeling_qwen.py: w1 and w2 are intermediate_size // 2 wide, c_attn keeps a bias; read
    # literally, 11008 would make Qwen-1.8B a 2.65B model. The Qwen report (arXiv:2309.16609)
    # names it 1.8B: [1.75e9, 1.85e9) at its rounding
    m, warnings = hf.model_from_config(load("qwen-1.8b"))
    h, L, f, V = 2048, 24, 11008 // 2, 151936
    per_layer = 4 * h * h + 3 * h + 3 * h * f + 2 * 2 * h
    assert m.params == L * per_layer + 2 * h + 2 * V * h
    assert 1.75e9 <= m.params < 1.85e9
    assert m.with_(ffn_hidden=2 * f).params > 2.6e9
    assert any("intermediate_size / 2" in w for w in warnings)


def test_squared_relu_is_two_matrices():
    # Nemotron's MLP: up_proj and down_proj around relu2, no gate (transformers
    # modeling_nemotron.py); a gated reading would add L h f = 906M (21%)
    m, warnings = hf.model_from_config(load("nemotron-4-4b"))
    h, L, a, kv, d, f, V = 3072, 32, 24, 8, 128, 9216, 256000
    per_layer = 2 * h * a * d + 2 * h * kv * d + 2 * h * f + 2 * h
    assert not m.gated_ffn and m.params == L * per_layer + h + 2 * V * h
    assert "hidden_act 'relu2' is not SiLU/GLU-type" in note(load("nemotron-4-4b"))


def test_llama3_8b_under_an_unlisted_name_is_its_exact_count():
    c = dict(load("llama3.1-8b"), architectures=["Llama3LikeForCausalLM"], model_type="l3like")
    m, warnings = hf.model_from_config(c)
    # Meta's Llama 3 8B: 8,030,261,248 parameters (the Llama reader gives the same)
    assert m.params == 8_030_261_248 == model("llama3.1-8b").params
    assert m.name == "Llama3LikeForCausalLM"


# ---------------------------------------------------------------------------- what is assumed

def test_the_note_names_every_default_used():
    c = bare()
    m = hf.model_from_config(c)[0]
    text = note(c)
    assert text.startswith("BareForCausalLM is not a family llmcost lists: read generically")
    for words in ("FFN gated, 3 matrices: no hidden_act, LlamaConfig's default 'silu'",
                  "FFN width 4 x hidden = 256", "tied embeddings", "PretrainedConfig's default",
                  "key/value heads = heads 4", "RMSNorm", "rotary positions", "no biases",
                  "no dropout"):
        assert words in text, words
    # the defaults it names: 4h gated FFN, tied, MHA, RMSNorm, no biases
    h, L, V = 64, 2, 100
    assert m.params == L * (4 * h * h + 3 * h * 4 * h + 2 * h) + h + V * h


def test_a_config_naming_no_architecture_is_read_too():
    c = {k: x for k, x in bare().items() if k != "architectures"}
    m, warnings = hf.model_from_config(c)
    assert m.name == "generic" and "a config naming no architecture" in warnings[0]


@pytest.mark.parametrize("act, gated", [
    ("silu", True), ("swish", True), ("SiLU", True), ("swiglu", True), ("geglu", True),
    ("reglu", True), ("gated-gelu", True),
    ("gelu", False), ("gelu_new", False), ("gelu_pytorch_tanh", False), ("relu", False),
    ("relu2", False),
])
def test_the_ffn_matrices_follow_the_activation(act, gated):
    for key in gen.ALIASES["activation"]:
        m = hf.model_from_config(bare(intermediate_size=128, **{key: act}))[0]
        assert m.gated_ffn is gated and f"{key} {act!r}" in note(bare(**{key: act}))
        # a third matrix is L h f more weights
        assert m.params - m.with_(gated_ffn=not gated).params == (1 if gated else -1) * 2 * 64 * 128


def test_gpt2_names_without_an_activation_take_gpt2s_default():
    c = {"architectures": ["GPT2LMHeadModel"], "n_embd": 64, "n_layer": 2, "n_head": 4,
         "vocab_size": 100}
    assert not hf.model_from_config(c)[0].gated_ffn
    assert "GPT2Config's default 'gelu_new'" in note(c)


def test_tie_word_embeddings_is_honoured_and_defaults_to_true():
    assert hf.model_from_config(bare())[0].tied_embeddings
    untied = hf.model_from_config(bare(tie_word_embeddings=False))[0]
    assert not untied.tied_embeddings and "tied embeddings" not in note(bare(
        tie_word_embeddings=False))
    assert untied.params - hf.model_from_config(bare())[0].params == 100 * 64


@pytest.mark.parametrize("fields, kv", [
    ({"num_key_value_heads": 2}, 2), ({"num_kv_heads": 2}, 2), ({"n_head_kv": 1}, 1),
    ({"multi_query": True}, 1), ({"multi_query": False}, 4),
    ({"multi_query_attention": True, "multi_query_group_num": 2}, 2),
    ({"multi_query_attention": False, "multi_query_group_num": 2}, 4),
])
def test_key_value_head_aliases(fields, kv):
    assert hf.model_from_config(bare(**fields))[0].kv_heads == kv


def test_size_aliases_and_the_padded_vocabulary():
    c = {"architectures": ["X"], "d_model": 64, "num_layers": 3, "n_head": 4, "n_vocab": 100,
         "ffn_dim": 96, "n_positions": 512}
    m, warnings = hf.model_from_config(c)
    assert (m.hidden, m.layers, m.heads, m.vocab, m.ffn_hidden, m.seq_len) == \
        (64, 3, 4, 100, 96, 512)
    assert any("min(n_positions 512" in w for w in warnings)
    # a Megatron export gives both: the embedding has the padded rows
    assert hf.model_from_config(bare(padded_vocab_size=128))[0].vocab == 128


def test_layout_fields_are_read():
    m = hf.model_from_config(bare(layer_norm_eps=1e-5, alibi=True, bias=True,
                                  attention_dropout=0.1))[0]
    assert (m.norm, m.position_embedding, m.biases, m.dropout) == \
        ("layernorm", "alibi", "all", True)
    assert hf.model_from_config(bare(position_embedding_type="absolute"))[0] \
        .position_embedding == "learned"
    assert hf.model_from_config(bare(no_bias=False))[0].biases == "all"
    assert hf.model_from_config(bare(use_qkv_bias=True))[0].biases == "qkv"


def test_experts_are_read_with_their_aliases():
    c = bare(num_local_experts=8, moe_topk=2, intermediate_size=32, moe_intermediate_size=16,
             n_shared_experts=1, first_k_dense_replace=1)
    m = hf.model_from_config(c)[0]
    assert (m.moe_experts, m.moe_top_k, m.moe_ffn_hidden, m.moe_shared_ffn_hidden,
            m.moe_dense_layers) == (8, 2, 16, 16, 1)
    h = 64
    dense_ffn, expert = 3 * h * 32, 3 * h * 16
    # one dense layer, one MoE layer of 8 routed + 1 shared expert and an h x 8 router
    assert m.params - m.active_params == 6 * expert
    assert m.params == 2 * (4 * h * h + 2 * h) + dense_ffn + 9 * expert + 8 * h + h + 100 * h
    e = one_line_error(hf.model_from_config, bare(num_experts=8))
    assert e.param == "num_experts_per_tok" and "moe_topk or top_k" in str(e)


# ---------------------------------------------------------------------------- refusals

def test_t5_is_refused_as_encoder_decoder():
    # T5Config's defaults (transformers configuration_t5.py: the t5-small layout)
    t5 = {"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_model": 512,
          "d_kv": 64, "d_ff": 2048, "num_layers": 6, "num_decoder_layers": 6, "num_heads": 8,
          "vocab_size": 32128, "feed_forward_proj": "relu", "is_encoder_decoder": True}
    e = one_line_error(hf.model_from_config, t5)
    assert e.param == "architectures"
    assert "T5ForConditionalGeneration is an encoder-decoder model" in str(e)
    assert "decoder-only" in str(e)


def test_encoder_decoder_keys_alone_are_refused():
    # BartConfig's keys without is_encoder_decoder (a hand-trimmed file)
    bart = {"architectures": ["BartForConditionalGeneration"], "d_model": 1024,
            "encoder_layers": 12, "decoder_layers": 12, "vocab_size": 50265}
    e = one_line_error(hf.model_from_config, bart)
    assert "BartForConditionalGeneration" in str(e) and "decoder_layers 12" in str(e)


def test_a_masked_lm_encoder_is_refused():
    e = one_line_error(hf.model_from_config, bare(architectures=["BertForMaskedLM"]))
    assert "BertForMaskedLM is a masked-language-model encoder" in str(e)


@pytest.mark.parametrize("size", ["hidden", "layers", "heads", "vocab"])
def test_a_missing_size_names_the_field_and_its_aliases(size):
    c = dict(load("llama3.1-8b"), architectures=["Llama3LikeForCausalLM"], model_type="l3like")
    for key in gen.ALIASES[size]:
        c.pop(key, None)
    e = one_line_error(hf.model_from_config, c)
    assert e.param == gen.ALIASES[size][0]
    assert all(k in str(e) for k in gen.ALIASES[size]) and "missing" in str(e)
    assert "Llama3LikeForCausalLM" in str(e) and "read generically" in str(e)


def test_a_bad_alias_value_names_its_key():
    e = one_line_error(hf.model_from_config, {"architectures": ["X"], "n_embd": -1,
                                              "n_layer": 2, "n_head": 4, "vocab_size": 10})
    assert e.param == "n_embd" and "-1" in str(e)


# ---------------------------------------------------------------------------- links

# test_hf_config.test_link_fields_round_trip_to_the_same_model reads every sample, these too,
# back from its cfg.<field> keys to the same model and the same warnings (the generic note)

@pytest.mark.parametrize("name", sorted(GENERIC))
def test_a_generic_configs_link_keeps_its_architecture_name(name):
    fields = hf.config_fields(load(name))
    assert fields["architectures"] == [GENERIC[name]] and set(fields) <= set(hf.FIELD_KINDS)
    assert GENERIC[name] not in {a for archs, _ in hf.SUPPORTED.values() for a in archs}


def test_the_generic_fields_have_one_kind_each():
    for key, kind in gen.FIELD_KINDS.items():
        assert hf.FIELD_KINDS[key] == kind
    assert set(gen.ALIASES["max_positions"]) <= set(hf.FIELD_KINDS)
    for keys in gen.ALIASES.values():
        assert set(keys) <= set(hf.FIELD_KINDS)

"""A config.json of any decoder-only family on the command line, and the architecture flags
beside --model-config: each replaces the config's field with a note in the output, or is
refused in one line naming the flag and the field (exit 2), on every subcommand that reads a
model from --model-config."""

import json
from pathlib import Path

import pytest
from cli.test_cli_robust import run_cli

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
LLAMA = str(CONFIGS / "llama3.1-8b.json")
#: Llama 3 8B's published parameter count (meta-llama/Meta-Llama-3-8B: 8,030,261,248)
LLAMA3_8B = 8_030_261_248
#: its sizes: layers, hidden, heads, key/value heads, head width, FFN width, vocabulary
L, H, A, KV, D, F, V = 32, 4096, 32, 8, 128, 14336, 128256


def ok(argv) -> dict:
    code, out, err = run_cli([*argv, "--json"])
    assert code == 0, err
    return json.loads(out)


def refused(argv) -> str:
    code, out, err = run_cli([*argv, "--json"])
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and line.startswith("llmcost: error:")
    return line


@pytest.fixture
def unlisted_llama(tmp_path) -> str:
    """Llama 3 8B's fields under an architecture name no reader lists."""
    c = json.loads(Path(LLAMA).read_text())
    c.update(architectures=["Llama3LikeForCausalLM"], model_type="llama3like")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(c))
    return str(path)


def test_an_unlisted_architecture_reviews_at_llama3_8bs_count(unlisted_llama):
    r = ok(["review", "--model-config", unlisted_llama, "--query",
            "gpu=h100-sxm&gpus=64&tokens=1e12"])
    assert r["params"] == LLAMA3_8B and r["model"] == "config"
    assert any(w.startswith("Llama3LikeForCausalLM is not a family llmcost lists: read "
                            "generically") for w in r["warnings"])
    assert r["gpu_hours"] > 0 and r["layout"] is not None


def test_flops_reads_an_unlisted_architecture_with_its_note(unlisted_llama):
    r = ok(["flops", "--model-config", unlisted_llama])
    assert r["params"] == LLAMA3_8B
    assert any("read generically" in n for n in r["notes"])


# ---------------------------------------------------------------------------- overrides

def _count(layers=L, hidden=H, heads=A, kv=KV, head_dim=D, ffn=F, vocab=V) -> int:
    """Llama 3's layout counted by hand: q and o a d h each, k and v kv d h each, a SwiGLU of
    3 h f, two RMSNorms per layer, a final one, untied embedding and head."""
    per_layer = 2 * hidden * heads * head_dim + 2 * hidden * kv * head_dim + 3 * hidden * ffn \
        + 2 * hidden
    return layers * per_layer + hidden + 2 * vocab * hidden


#: flag, value, the config field it replaces, the count it gives (by hand)
OVERRIDES = [
    ("--layers", "16", "num_hidden_layers", _count(layers=16)),
    ("--hidden", "2048", "hidden_size", _count(hidden=2048, head_dim=2048 // A)),
    ("--heads", "16", "num_attention_heads", _count(heads=16, head_dim=H // 16)),
    ("--kv-heads", "4", "num_key_value_heads", _count(kv=4)),
    ("--ffn-hidden", "8192", "intermediate_size", _count(ffn=8192)),
    ("--vocab", "100000", "vocab_size", _count(vocab=100_000)),
]


def test_the_hand_count_is_llama3_8bs():
    assert _count() == LLAMA3_8B


@pytest.mark.parametrize("flag, value, field, params", OVERRIDES)
def test_a_flag_replaces_the_configs_field_with_a_note(flag, value, field, params):
    r = ok(["flops", "--model-config", LLAMA, flag, value])
    assert r["params"] == params
    name = flag[2:].replace("-", "_")
    assert f"{name} {value} replaces the config's {field}" in " | ".join(r["notes"])
    assert any(f"({LLAMA3_8B:,} as the config gives them)" in n for n in r["notes"])


def test_gated_ffn_turns_a_two_matrix_ffn_into_three():
    path = str(CONFIGS / "nemotron-4-4b.json")
    plain = ok(["flops", "--model-config", path])
    gated = ok(["flops", "--model-config", path, "--gated-ffn"])
    assert gated["params"] - plain["params"] == 32 * 3072 * 9216       # L h f
    assert any("gated_ffn True: FFN of 3 matrices, where the config's hidden_act gives 2" in n
               for n in gated["notes"])


def test_seq_len_beyond_the_configs_positions_is_noted():
    r = ok(["flops", "--model-config", str(CONFIGS / "stablelm-2-1.6b.json"), "--seq-len",
            "8192"])
    assert r["seq_len"] == 8192
    assert any("beyond the config's max_position_embeddings 4096" in n for n in r["notes"])


def test_heads_carry_what_the_config_derived_from_them():
    # Stable LM 2 gives num_key_value_heads 32: 16 heads are refused, 32 KV heads not dividing
    # them (naming both fields); Qwen-1 gives no num_key_value_heads (as many as the heads) and
    # its head width as kv_channels 128: the KV heads follow the heads, the width stays
    line = refused(["flops", "--model-config", str(CONFIGS / "stablelm-2-1.6b.json"),
                    "--heads", "16"])
    assert "--heads" in line and "num_attention_heads 32" in line and "num_key_value_heads 32" \
        in line
    r = ok(["flops", "--model-config", str(CONFIGS / "qwen-1.8b.json"), "--heads", "8"])
    assert any("kv_heads 8 = heads, as the config had (16 before)" in n for n in r["notes"])
    assert not any(n.startswith("head_dim") for n in r["notes"])
    # q, k, v and o shrink from 16 to 8 heads of 128 (with their q/k/v biases) in 24 layers
    assert r["params"] - ok(["flops", "--model-config", str(CONFIGS / "qwen-1.8b.json")])[
        "params"] == -24 * (4 * 2048 * 8 * 128 + 3 * 8 * 128)


# ---------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("argv, words", [
    (["flops", "--model-config", str(CONFIGS / "deepseek-v2-lite.json"), "--kv-heads", "4"],
     ("--kv-heads", "kv_lora_rank 512", "no key/value heads")),
    (["flops", "--model-config", str(CONFIGS / "mixtral-8x7b.json"), "--ffn-hidden", "4096"],
     ("--ffn-hidden", "intermediate_size 14336", "MoE")),
    (["flops", "--model-config", str(CONFIGS / "gemma-2-9b.json"), "--layers", "40"],
     ("--layers", "num_hidden_layers 42", "sliding-window")),
    (["flops", "--model-config", LLAMA, "--heads", "30"],
     ("--heads", "num_attention_heads 32", "num_key_value_heads 8")),
    (["memory", "--model-config", LLAMA, "--params", "7e9", "--gpus", "8", "--tp", "8",
      "--pp", "1"], ("--params", "--model-config", "hidden_size", f"{LLAMA3_8B:,}")),
    (["flops", "--model-config", LLAMA, "--model", "llama3-8b"], ("--model-config", "--model")),
])
def test_a_flag_that_cannot_replace_the_field_is_refused_naming_both(argv, words):
    line = refused(argv)
    for w in words:
        assert w in line, w


# ---------------------------------------------------------------------------- every subcommand

#: the subcommands that read a model from --model-config and their other flags
SUBCOMMANDS = [
    pytest.param(["flops"], id="flops"),
    pytest.param(["memory", "--gpus", "8", "--tp", "8", "--pp", "1"], id="memory"),
    pytest.param(["predict", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "8", "--pp", "1",
                  "--global-batch", "8"], id="predict"),
    pytest.param(["mfu", "--global-batch", "8", "--steps", "10", "--gpus", "8", "--gpu",
                  "h100-sxm", "--wall-clock-s", "100"], id="mfu"),
    pytest.param(["plan", "--gpu", "h100-sxm", "--gpus", "8", "--global-batch", "8", "--top",
                  "1"], id="plan"),
    pytest.param(["size", "--tokens", "1e11", "--days", "30"], id="size",
                 marks=pytest.mark.slow),
    pytest.param(["ladder", "--gpu", "h100-sxm"], id="ladder"),
]


@pytest.mark.parametrize("argv", SUBCOMMANDS)
def test_every_subcommand_applies_the_flags_beside_a_config(argv):
    # before, --kv-heads, --ffn-hidden and --gated-ffn were silently ignored beside a config
    r = ok([argv[0], "--model-config", LLAMA, "--kv-heads", "4", *argv[1:]])
    assert any("kv_heads 4 replaces the config's num_key_value_heads 8" in n
               for n in r["notes"])
    if "params" in r:
        assert r["params"] == _count(kv=4)
    refused([argv[0], "--model-config", str(CONFIGS / "deepseek-v2-lite.json"), "--kv-heads",
             "4", *argv[1:]])


# ---------------------------------------------------------------------------- review links

def test_a_cfg_key_beside_a_config_file_replaces_its_field_in_the_review():
    # review and storage take no architecture flags: a link's cfg.<field>= key is their way
    # (it was refused as given twice); the link the review shares carries the new value
    from llmcost.review import evaluate
    from llmcost.scenario import Scenario
    r = ok(["review", "--model-config", LLAMA, "--query", "gpus=64&cfg.num_key_value_heads=4"])
    assert r["params"] == _count(kv=4)
    assert "cfg.num_key_value_heads=4 replaces the config file's num_key_value_heads 8" in \
        r["warnings"]
    s, _ = Scenario.from_query(Scenario(**r["scenario"]).to_query())
    assert evaluate(s).to_json()["params"] == _count(kv=4)
    line = refused(["review", "--model-config", LLAMA, "--query", "gpus=64&cfg.bogus=1"])
    assert "cfg.bogus" in line

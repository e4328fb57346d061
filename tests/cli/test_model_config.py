"""A team's own model, brought as its Hugging Face config.json: the CLI reads it, the review
evaluates it, and the link it shares carries its fields (``cfg.<field>=``) and reproduces it."""

import contextlib
import io
import json
from pathlib import Path

import pytest

from llmcost import catalog
from llmcost.cli import main
from llmcost.review import evaluate
from llmcost.scenario import Scenario

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
ARCHITECTURES = sorted(p.stem for p in CONFIGS.glob("*.json"))


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_review_answers_every_supported_architecture(name):
    code, out, _ = run(["review", "--model-config", str(CONFIGS / f"{name}.json"), "--query",
                        "tokens=1e12&gpus=512&seq_len=4096", "--json"])
    assert code == 0
    r = json.loads(out)
    assert r["model"] == "config" and r["seq_len"] == 4096
    assert r["layout"] is not None and r["gpu_hours"] > 0 and r["napkin_gpu_hours"] > 0
    # the link it shares reproduces it
    s, warnings = Scenario.from_query(Scenario(**{k: v for k, v in r["scenario"].items()}).to_query())
    assert not warnings
    again = evaluate(s).to_json()
    assert again["gpu_hours"] == pytest.approx(r["gpu_hours"], rel=1e-12)


def test_a_config_equal_to_a_catalog_row_reviews_as_the_row():
    # Llama 3.1 70B's config.json and the catalog's llama3-70b: same architecture, same answer
    code, out, _ = run(["review", "--model-config", str(CONFIGS / "llama3.1-70b.json"),
                        "--query", "gpus=1024&seq_len=8192", "--json"])
    assert code == 0
    by_config = json.loads(out)
    by_id = evaluate(Scenario(model="llama3-70b", gpus=1024, seq_len=8192)).to_json()
    assert by_config["days"] == pytest.approx(by_id["days"], rel=1e-9)
    assert by_config["napkin_gpu_hours"] == pytest.approx(by_id["napkin_gpu_hours"], rel=1e-9)


def test_the_link_carries_the_config_fields():
    code, out, _ = run(["review", "--model-config", str(CONFIGS / "qwen3-30b-a3b.json"),
                        "--query", "gpus=256", "--json"])
    r = json.loads(out)
    q = Scenario(**r["scenario"]).to_query()
    assert "model=config" in q and "cfg.num_experts=128" in q and "cfg.hidden_size=2048" in q
    # the config's seq_len warning: min(max_position_embeddings, 8192)
    assert any("seq_len 8192" in w for w in r["warnings"])


@pytest.mark.parametrize("cmd", [
    ["flops", "--tokens", "1e12"],
    ["memory", "--gpus", "64", "--tp", "8", "--pp", "1"],
    ["predict", "--gpu", "h100-sxm", "--gpus", "64", "--tp", "8", "--pp", "1",
     "--global-batch", "64", "--seq-len", "4096"],
    ["plan", "--gpu", "h100-sxm", "--gpus", "64", "--global-batch", "64", "--seq-len", "4096",
     "--top", "1"],
    ["size", "--tokens", "1e11", "--days", "30", "--gpu", "h100-sxm"],
])
@pytest.mark.slow
def test_architecture_commands_take_a_config(cmd):
    path = str(CONFIGS / "llama3.1-8b.json")
    code, out, err = run([cmd[0], "--model-config", path, *cmd[1:], "--json"])
    assert code == 0, err
    r = json.loads(out)
    code, ref, _ = run([cmd[0], "--model", "llama3-8b", *cmd[1:], "--json"])
    assert code == 0
    ref = json.loads(ref)
    # the same architecture as the catalog row: the same figures
    for key in ("params", "total_flops", "total_gb", "step_time_s", "gpus"):
        if key in r and key in ref:
            assert r[key] == pytest.approx(ref[key], rel=1e-9), key


def test_an_unlisted_architecture_missing_a_size_is_one_line_naming_it(tmp_path):
    f = tmp_path / "config.json"
    f.write_text(json.dumps({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
                             "n_layer": 12}))
    code, out, err = run(["review", "--model-config", str(f), "--query", "gpus=8", "--json"])
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and "GPT2LMHeadModel" in line and "read generically" in line
    assert all(k in line for k in ("hidden_size", "d_model", "n_embd", "missing"))


def test_model_config_and_a_model_in_the_query_are_refused():
    code, _, err = run(["review", "--model-config", str(CONFIGS / "llama3.1-8b.json"),
                        "--query", "model=llama3-70b", "--json"])
    assert code == 2 and "--model-config" in err and "model=" in err


def test_a_bad_cfg_value_in_a_link_names_its_key():
    code, _, err = run(["review", "--query", "cfg.architectures=LlamaForCausalLM"
                        "&cfg.hidden_size=-5&cfg.num_hidden_layers=2&cfg.num_attention_heads=2"
                        "&cfg.vocab_size=100&cfg.intermediate_size=8", "--json"])
    assert code == 2 and "hidden_size" in err and "\n" not in err.strip()


def test_catalog_is_untouched_by_a_config_review():
    before = catalog.default().ids("models")
    run(["review", "--model-config", str(CONFIGS / "mixtral-8x7b.json"), "--query", "gpus=64",
         "--json"])
    assert catalog.default().ids("models") == before


def test_a_config_is_named_by_its_name_or_path_else_its_file(tmp_path):
    cfg = json.loads((CONFIGS / "qwen3-8b.json").read_text())
    cfg.pop("_name_or_path", None)
    named = tmp_path / "named.json"
    named.write_text(json.dumps({**cfg, "_name_or_path": "Qwen/Qwen3-8B"}))
    bare = tmp_path / "my-qwen.json"
    bare.write_text(json.dumps(cfg))
    for path, name in ((named, "Qwen/Qwen3-8B"), (bare, "my-qwen.json")):
        code, out, _ = run(["review", "--model-config", str(path), "--query",
                            "tokens=1e11&gpus=64", "--json"])
        r = json.loads(out)
        assert code == 0 and r["model"] == "config" and r["model_name"] == name
        # the link carries the name, so the page names the model alike
        s, _ = Scenario.from_query(Scenario(**r["scenario"]).to_query())
        assert s.model_label == f"config: {name}"

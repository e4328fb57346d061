"""`llmcost serve`: the Done-when keys, the planner under limits, one-line errors."""

import json
from pathlib import Path

import pytest

from llmcost.cli import main

HF = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
KEYS = ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_gpu", "kv_bytes_per_token",
        "max_concurrency", "weights_gb_per_gpu", "fits", "usd_per_million_output_tokens")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_serve_layout_json(capsys):
    code, out, err = run(capsys, "serve", "--json", "--query",
                         "model=llama3-70b&gpu=h100-sxm&tp=4&ep=1&weights=fp8&kv=fp8&isl=1000"
                         "&osl=1000&concurrency=64&engine=vllm")
    assert code == 0, err
    r = json.loads(out)
    assert all(k in r for k in KEYS)
    assert r["kv_bytes_per_token"] == 2 * 80 * 8 * 128 * 1          # FP8 KV: 160 KiB
    assert r["fits"] is True and r["concurrency"] == 64 and r["tp"] == 4
    # $/M output tokens = $/GPU-h x 1e6 / (3600 x tokens/s per GPU), AWS p5 $55.04 / 8
    assert r["usd_per_million_output_tokens"]["on_demand"] == pytest.approx(
        55.04 / 8 * 1e6 / 3600 / r["output_tokens_per_s_per_gpu"])
    # weights: 68.45e9 FP8 body + 2.10e9 BF16 embedding and head over 4 GPUs
    assert r["weights_gb_per_gpu"] == pytest.approx((68_452_360_192 + 2 * 2_101_346_304)
                                                    / 4 / 1e9)


def test_serve_best_layout_under_limits(capsys):
    code, out, err = run(capsys, "serve", "--json", "--query",
                         "model=llama3-70b&gpu=h100-sxm&weights=fp8&isl=1000&osl=1000"
                         "&ttft_ms_max=1000&tpot_ms_max=25")
    assert code == 0, err
    r = json.loads(out)
    assert r["tpot_ms"] <= 25 and r["ttft_ms"] <= 1000 and r["fits"]
    assert r["feasible"] >= 1 and r["candidates"][0]["tp"] == r["tp"]
    best = max(c["output_tokens_per_s_per_gpu"] for c in r["candidates"])
    assert r["output_tokens_per_s_per_gpu"] == best


def test_serve_model_config(capsys):
    code, out, err = run(capsys, "serve", "--json", "--model-config", str(HF / "qwen3-8b.json"),
                         "--query", "gpu=h100-sxm&tp=1&isl=512&osl=512")
    assert code == 0, err
    # Qwen3-8B: 36 layers x 8 KV heads x 128 dims x 2 (K, V) x 2 bytes
    assert json.loads(out)["kv_bytes_per_token"] == 36 * 8 * 128 * 2 * 2


@pytest.mark.parametrize("query, names", [
    ("model=llama3-8b&colour=red", "colour"),
    ("model=llama3-8b&tp=two", "tp"),
    ("model=llama3-8b&tp=3", "tp"),
    ("model=llama3-8b&weights=int3", "weights"),
    ("model=llama3-8b&engine=tgi", "engine"),
    ("model=llama3-8b&isl=0", "isl"),
    ("gpu=h100-sxm", "model"),
    ("model=llama3-8b&tp=1&ep=2", "ep"),
])
def test_serve_bad_query_one_line(capsys, query, names):
    code, out, err = run(capsys, "serve", "--json", "--query", query)
    assert code == 2 and out == ""
    assert err.startswith("llmcost: error:") and err.count("\n") == 1 and names in err


def test_serve_traffic_level_gpus_and_cost_per_day(capsys):
    code, out, err = run(capsys, "serve", "--json", "--query",
                         "model=llama3-70b&gpu=h100-sxm&tp=4&weights=fp8&isl=1000&osl=1000"
                         "&concurrency=64&requests_per_s=10")
    assert code == 0, err
    r = json.loads(out)
    # 10 requests/s x 1,000 output tokens over the layout's tokens/s per GPU, whole 4-GPU
    # instances; a day of them at $55.04 / 8 per GPU-hour on demand
    need = 10 * 1000 / r["output_tokens_per_s_per_gpu"]
    assert r["gpus_needed"] == 4 * -(-need // 4)
    assert r["usd_per_day"]["on_demand"] == pytest.approx(r["gpus_needed"] * 24 * 55.04 / 8)


@pytest.mark.slow
def test_serve_every_catalog_model_every_engine_plans_or_answers(capsys):
    # no traceback and finite JSON for every catalog model and engine (plan mode under a
    # TPOT limit); an infeasible limit is an answer (fits false), not an error
    from llmcost import catalog
    n = 0
    for mid in catalog.default().ids("models"):
        for engine in ("vllm", "sglang", "trtllm"):
            code, out, err = run(capsys, "serve", "--json", "--query",
                                 f"model={mid}&gpu=h200&weights=fp8&isl=2000&osl=500"
                                 f"&engine={engine}&tpot_ms_max=50")
            assert code == 0, (mid, engine, err)
            r = json.loads(out)
            assert "fits" in r
            n += 1
    assert n == 3 * len(catalog.default().ids("models"))

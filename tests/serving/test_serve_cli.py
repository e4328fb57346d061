"""`llmcost serve`: the Done-when keys, the planner under limits, one-line errors."""

import json
import math
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


def serve_json(capsys, query, *extra):
    code, out, err = run(capsys, "serve", "--json", "--query", query, *extra)
    assert code == 0, err
    return json.loads(out)


def test_serve_layout_json(capsys):
    r = serve_json(capsys, "model=llama3-70b&gpu=h100-sxm&tp=4&ep=1&weights=fp8&kv=fp8&isl=1000"
                   "&osl=1000&concurrency=64&engine=vllm")
    assert all(k in r for k in KEYS)
    assert r["kv_bytes_per_token"] == 2 * 80 * 8 * 128 * 1          # FP8 KV: 160 KiB
    assert r["fits"] is True and r["concurrency"] == 64 and r["tp"] == 4
    # $/M output tokens = $/GPU-h x 1e6 / (3600 x tokens/s per GPU), the rule's on-demand
    # offer RunPod $21.52 / 8
    assert r["usd_per_million_output_tokens"]["on_demand"] == pytest.approx(
        21.52 / 8 * 1e6 / 3600 / r["output_tokens_per_s_per_gpu"])
    # weights: 68.45e9 FP8 body + 2.10e9 BF16 embedding and head over 4 GPUs
    assert r["weights_gb_per_gpu"] == pytest.approx((68_452_360_192 + 2 * 2_101_346_304)
                                                    / 4 / 1e9)


def test_serve_best_layout_under_limits(capsys):
    r = serve_json(capsys, "model=llama3-70b&gpu=h100-sxm&weights=fp8&isl=1000&osl=1000"
                   "&ttft_ms_max=1000&tpot_ms_max=25")
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
    # the scheduler's keys name their range
    ("model=llama3-8b&gpu_memory_utilization=0", "gpu_memory_utilization must be in (0, 1], "
                                                 "got 0"),
    ("model=llama3-8b&gpu_memory_utilization=1.5", "gpu_memory_utilization must be in (0, 1], "
                                                   "got 1.5"),
    ("model=llama3-8b&max_num_seqs=0", "max_num_seqs must be in [1, "),
    ("model=llama3-8b&max_num_batched_tokens=-5", "max_num_batched_tokens must be in [1, "),
    ("model=llama3-8b&serve_tp=-1", "serve_tp must be in [0, 4096], got -1"),
    ("model=llama3-8b&kv=int4", "kv must be one of 'auto', 'bf16', 'fp16', 'fp8'"),
])
def test_serve_bad_query_one_line(capsys, query, names):
    code, out, err = run(capsys, "serve", "--json", "--query", query)
    assert code == 2 and out == ""
    assert err.startswith("llmcost: error:") and err.count("\n") == 1 and names in err


def test_serve_traffic_level_gpus_and_cost_per_day(capsys):
    r = serve_json(capsys, "model=llama3-70b&gpu=h100-sxm&tp=4&weights=fp8&isl=1000&osl=1000"
                   "&concurrency=64&requests_per_s=10")
    # 10 requests/s x 1,000 output tokens over the layout's tokens/s per GPU, whole 4-GPU
    # instances; a day of them at the rule's on-demand offer, RunPod's $21.52 / 8 per GPU-hour
    need = 10 * 1000 / r["output_tokens_per_s_per_gpu"]
    assert r["gpus_needed"] == 4 * -(-need // 4)
    assert r["usd_per_day"]["on_demand"] == pytest.approx(r["gpus_needed"] * 24 * 21.52 / 8)


@pytest.mark.slow
def test_serve_every_catalog_model_every_engine_plans_or_answers(capsys):
    # no traceback and finite JSON for every catalog model and engine (plan mode under a
    # TPOT limit); an infeasible limit is an answer (fits false), not an error
    from llmcost import catalog
    n = 0
    for mid in catalog.default().ids("models"):
        for engine in ("vllm", "sglang", "trtllm"):
            r = serve_json(capsys, f"model={mid}&gpu=h200&weights=fp8&isl=2000&osl=500"
                                   f"&engine={engine}&tpot_ms_max=50")
            assert "fits" in r
            n += 1
    assert n == 3 * len(catalog.default().ids("models"))


# ---------------------------------------------------------------- one answer

def test_serve_tp_is_tp_and_kv_auto_is_the_engines_default(capsys):
    base = "model=llama3-70b&gpu=h100-sxm&isl=1000&osl=1000&concurrency=64"
    tp = serve_json(capsys, base + "&tp=4")
    alias = serve_json(capsys, base + "&serve_tp=4&kv=auto")
    for key in ("tp", "ep", "ttft_ms", "tpot_ms", "kv_bytes_per_token", "max_concurrency"):
        assert alias[key] == tp[key], key
    # vLLM's kv_cache_dtype=auto on BF16 weights: BF16, 80 layers x 8 KV heads x 128 x 2 x 2
    assert alias["kv_bytes_per_token"] == 80 * 8 * 128 * 2 * 2 and alias["kv"] == "bf16"
    # an app link carries the training layout's tp beside serve_tp: serve_tp is served and
    # the training key is named as ignored
    both = serve_json(capsys, base + "&tp=8&serve_tp=4")
    assert both["tp"] == 4 and both["ttft_ms"] == tp["ttft_ms"]
    assert any(n.startswith("tp=8 ignored: serve_tp=4") for n in both["notes"])
    # serve_tp=0 is the app's "planner": the planner chooses, as without tp
    assert serve_json(capsys, base + "&serve_tp=0")["tp"] == serve_json(capsys, base)["tp"]


def test_a_layout_that_does_not_fit_has_memory_figures_and_no_run(capsys):
    from llmcost.serving.serve import RUN_FIGURES
    # Llama 3.1 405B in BF16 over TP 2: 405e9 x 2 bytes / 2 = 405 GB of weights per GPU
    # against 80 GiB, so not one sequence fits: no time, throughput or price exists
    r = serve_json(capsys, "model=llama3-405b&gpu=h100-sxm&tp=2&weights=bf16&concurrency=64"
                           "&requests_per_s=2")
    assert r["fits"] is False and r["max_concurrency"] == 0
    assert r["weights_gb_per_gpu"] == pytest.approx(405.85e9 * 2 / 2 / 1e9, rel=0.01)
    assert [k for k in RUN_FIGURES if r.get(k) is not None] == []
    assert "gpus_needed" not in r and "usd_per_day" not in r
    assert r["notes"][0].startswith("does not fit: 405.9 GB of weights per GPU leave no room")
    assert "requests_per_s=2 not sized" in r["notes"][1]
    # Llama 3 70B in FP8 over TP 4 holds a few hundred sequences of 2,000 tokens, not 4,000
    over = serve_json(capsys, "model=llama3-70b&gpu=h100-sxm&tp=4&weights=fp8&isl=1000&osl=1000"
                              "&concurrency=4000")
    assert over["fits"] is False and 0 < over["max_concurrency"] < 4000
    assert over["tpot_ms"] is None and over["usd_per_million_output_tokens"] is None
    at_most = serve_json(capsys, "model=llama3-70b&gpu=h100-sxm&tp=4&weights=fp8&isl=1000"
                                 f"&osl=1000&concurrency={over['max_concurrency']}")
    assert at_most["fits"] is True and at_most["tpot_ms"] > 0
    # the table says n/a, never a figure for the load that does not run
    code, out, _ = run(capsys, "serve", "--query", "model=llama3-405b&gpu=h100-sxm&tp=2")
    assert code == 0
    assert "n/a" in next(line for line in out.splitlines() if line.startswith("tpot_ms"))


def test_a_given_tp_is_kept_under_limits_it_cannot_meet(capsys):
    # TP 1 cannot hold Llama 3 70B in BF16 (141 GB > 80 GiB): never re-planned to TP 2+
    r = serve_json(capsys, "model=llama3-70b&gpu=h100-sxm&tp=1&tpot_ms_max=100")
    assert r["fits"] is False and "tp" not in r
    assert r["notes"][-1].endswith("at tp=1") and "tpot_ms_max=100" in r["notes"][-1]


@pytest.mark.parametrize("engine, own", [
    ("vllm", ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization")),
    ("sglang", ("max_running_requests", "chunked_prefill_size", "mem_fraction_static")),
    ("trtllm", ("max_batch_size", "max_num_tokens", "kv_cache_free_gpu_mem_fraction")),
])
def test_engine_keys_set_the_scheduler_and_name_the_engines_setting(capsys, engine, own):
    r = serve_json(capsys, f"model=llama3-70b&gpu=h100-sxm&tp=4&engine={engine}"
                           "&max_num_seqs=64&max_num_batched_tokens=4096"
                           "&gpu_memory_utilization=0.8")
    es = r["engine_settings"]
    assert es["engine"] == engine and es["version"] and es["follows"] and es["source"]
    for key, name, x in zip(("max_num_seqs", "max_num_batched_tokens",
                             "gpu_memory_utilization"), own, (64, 4096, 0.8)):
        assert es[key] == {**es[key], "value": x, "engine_key": name, "set_by": "query"}
    # with no concurrency the engine runs what its cap allows: 64, and says which key set it
    assert r["concurrency"] == 64 < r["max_concurrency"]
    assert f"({own[0]} 64; max_num_seqs= sets it)" in r["concurrency_reason"]


def test_gpu_memory_utilization_moves_what_memory_holds_by_the_kv_arithmetic(capsys):
    q = "model=llama3-70b&gpu=h100-sxm&tp=4&isl=1024&osl=1024&gpu_memory_utilization="
    a, b = serve_json(capsys, q + "0.9"), serve_json(capsys, q + "0.8")
    # C = floor((phi x 80 GiB - weights - activations) / one sequence's KV on a GPU): 2,048
    # tokens x 327,680 B, its 8 KV heads split over TP 4
    kv_seq = 2048 * 327_680 / 4
    for r, phi in ((a, 0.9), (b, 0.8)):
        free = phi * 80 * 2**30 - (r["weights_gb_per_gpu"] + r["activations_gb_per_gpu"]) * 1e9
        assert r["max_concurrency"] == int(free // kv_seq)
    assert b["engine_settings"]["gpu_memory_utilization"]["share_of"] == "the GPU's memory"


def test_vllm_defaults_follow_the_gpus_memory(capsys):
    # vLLM 0.10's vllm serve: 1024 sequences and 8192 tokens a step on GPUs of 70 GiB or more
    # other than A100, 256 and 2048 on the others. Llama 3 8B, 1,024 tokens a sequence:
    # 128 KiB x 1024 = 134 MB of KV each; about 460 fit beside 16 GB of weights on 80 GB
    q = "model=llama3-8b&tp=1&isl=512&osl=512&gpu="
    h100, a100 = serve_json(capsys, q + "h100-sxm"), serve_json(capsys, q + "a100-80gb")
    assert h100["engine_settings"]["max_num_seqs"]["value"] == 1024
    assert h100["engine_settings"]["max_num_batched_tokens"]["value"] == 8192
    assert a100["engine_settings"]["max_num_seqs"]["value"] == 256
    assert a100["engine_settings"]["max_num_batched_tokens"]["value"] == 2048
    assert 256 < a100["max_concurrency"] and a100["concurrency"] == 256
    assert "the engine's cap: vllm runs at most 256" in a100["concurrency_reason"]
    assert h100["concurrency"] == h100["max_concurrency"] < 1024
    assert f"the KV cache holds: {h100['max_concurrency']:,} sequences" in \
        h100["concurrency_reason"]


@pytest.mark.parametrize("gpu, tp, chunk, graph_bs", [
    ("h100-sxm", 1, 8192, 256), ("h100-sxm", 4, 8192, 512), ("b200", 8, 16384, 512),
    ("l40s", 2, 4096, 32),
])
def test_sglang_memory_share_is_its_own_rule_for_the_gpu_and_tp(capsys, cat, gpu, tp, chunk,
                                                                 graph_bs):
    # SGLang 0.5.4: mem_fraction_static = (HBM - reserved) / HBM [MiB], reserved = 512 +
    # 1.5 x chunk + 2 x cuda_graph_max_bs + TP / 8 x 1024, at least 10 GiB above 60 GiB
    r = serve_json(capsys, f"model=llama3-8b&gpu={gpu}&tp={tp}&engine=sglang&concurrency=8")
    mib = cat.gpu(gpu).memory_gib * 1024
    reserved = 512 + 1.5 * chunk + 2 * graph_bs + tp / 8 * 1024
    reserved = max(reserved, 10 * 1024) if mib > 60 * 1024 else reserved
    es = r["engine_settings"]
    assert es["gpu_memory_utilization"]["value"] == round((mib - reserved) / mib, 3)
    assert es["max_num_batched_tokens"]["value"] == chunk
    assert es["max_num_seqs"]["value"] is None      # unset: the KV pool limits it


def test_every_key_a_serve_answer_names_is_one_serve_takes(capsys):
    import re

    from llmcost.serving.query import KEYS
    answers = [
        serve_json(capsys, "gpu=h100-sxm&tp=8&isl=512&osl=512", "--model-config",
                   str(HF / "qwen3-8b.json")),
        serve_json(capsys, "model=llama3-70b&tp=8&serve_tp=4&ep=2&serve_ep=1"),
        serve_json(capsys, "model=llama3-70b&tp=2&concurrency=4096"),
        serve_json(capsys, "model=llama3-405b&ttft_ms_max=100"),
        serve_json(capsys, "model=llama3-70b&tpot_ms_max=20&engine=trtllm"),
    ]
    for r in answers:
        text = " ".join(r["notes"] + [r["concurrency_reason"]])
        named = set(re.findall(r"\b([a-z_]+)=", text))
        assert named <= set(KEYS), (named - set(KEYS), text)
        # the training sequence length is review's key: a config answer does not ask for it
        assert "seq_len" not in text


def test_calibration_names_the_rows_its_constants_are_fitted_to(capsys):
    import pandas as pd

    rows = pd.read_csv(HF.parents[2] / "data" / "serving_runs.csv")
    n_trt = int((rows.engine == "trtllm").sum())
    n_vllm = int((rows.engine == "vllm").sum())
    for engine in ("vllm", "sglang", "trtllm"):
        r = serve_json(capsys, f"model=llama3-8b&tp=1&concurrency=8&engine={engine}")
        assert f"{n_trt} TensorRT-LLM perf-overview throughput rows" in r["calibration"]
    assert f"({n_vllm} rows" in serve_json(capsys, "model=llama3-8b&tp=1")["calibration"]
    meas = pd.read_csv(HF.parents[2] / "data" / "serving_measurements.csv")
    n_sgl = int(((meas.engine == "sglang") & meas.source.str.contains("sgl-cookbook")).sum())
    assert f"SGLang cookbook's {n_sgl} benchmark points" in serve_json(
        capsys, "model=llama3-8b&tp=1&engine=sglang")["calibration"]


@pytest.mark.slow
def test_a_benchmark_plan_with_layouts_that_hold_no_request_answers_quietly(capsys):
    # Llama 3 70B in BF16 does not fit one H100 (141 GB of weights): its TP1 layouts run
    # none of the 200 prompts and have no latency; the plan answers from the layouts that
    # fit, without a warning or an error about the others
    code, out, err = run(capsys, "serve", "--json", "--query",
                         "model=llama3-70b&gpu=h100-sxm&num_prompts=200")
    assert code == 0 and err == "", err
    r = json.loads(out)
    assert r["fits"] and r["tp"] > 1 and r["feasible"] >= 1
    assert all(math.isfinite(r[k]) for k in ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_gpu"))

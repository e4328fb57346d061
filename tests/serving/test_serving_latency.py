"""Serving times: closed-loop identities, monotonicity in concurrency and sequence length,
the decode roofline at batch 1, the planner and $ per million tokens."""

import inspect
import re
from dataclasses import replace

import numpy as np
import pytest

from llmcost import catalog
from llmcost.serving import cost, engines, serve
from llmcost.serving import latency as lat
from llmcost.serving import memory as mem
from llmcost.serving import predict as pr
from llmcost.serving.deployment import Deployment, Search, Workload

CAT = catalog.default()
#: the keyword arguments of a Deployment (the rest are the Workload's)
DEPLOYMENT_KEYS = ("tp", "ep", "weights", "expert_weights", "kv", "attention_dp")


def _run(model_id, gpu_id, **kw):
    g = CAT.gpu(gpu_id)
    eng = engines.engine(kw.pop("engine", "vllm"))
    d = Deployment(CAT.model(model_id), g, CAT.fabric(g.scale_up), engine=eng.id,
                   **{k: kw.pop(k) for k in DEPLOYMENT_KEYS if k in kw})
    return pr.predict(d, Workload(**kw), eng)


def test_closed_loop_at_concurrency_one():
    # C = 1: no other prefill to wait for or be stalled by: TTFT = t_p + t_d / 2 and the
    # lifetime is o t_d + t_p, so TPOT = (o - 1/2) t_d / (o - 1)
    tp_, td, o = 0.2, 0.01, 101
    ttft, tpot, T = lat.closed_loop(tp_, td, 1, o)
    assert ttft == pytest.approx(0.2 + 0.005)
    assert tpot == pytest.approx((o - 0.5) * td / (o - 1))
    assert T == pytest.approx(o * td + tp_)


def test_closed_loop_lifetime_holds_every_slot_prefill():
    # T = o t_d + C t_p whatever the queueing split between TTFT and TPOT
    for c in (2, 16, 512):
        ttft, tpot, T = lat.closed_loop(0.05, 0.02, c, 500)
        assert T == pytest.approx(500 * 0.02 + c * 0.05)
        assert ttft + 499 * tpot == pytest.approx(T)
        assert tpot > 0


def test_expert_read_fraction():
    assert lat.expert_read_fraction(1, 256, 8) == pytest.approx(8 / 256)
    assert lat.expert_read_fraction(2, 256, 8) == pytest.approx(1 - (248 / 256) ** 2)
    assert lat.expert_read_fraction(4096, 256, 8) == pytest.approx(1.0)


def test_prefill_flops_quadratic_term():
    # 2 P s + n_h (d_qk + d_v) s^2 L (causal: half of 2 n_h (d_qk + d_v) s^2 L)
    f = lat.prefill_flops(1e9, 32, 32, 128, 128, 4096)
    assert f == pytest.approx(2e9 * 4096 + 32 * 256 * 4096 ** 2 * 32)


def test_decode_step_at_batch_one_is_weights_over_bandwidth():
    # Llama 3 70B FP8 on one H200 at C = 1: the step reads the weights (FP8 body, BF16
    # embedding and head) and one sequence's KV cache at the engine's bandwidth share, plus
    # its fixed step overhead; no TP collective at tp = 1
    e = engines.engine("vllm")
    isl, osl = 1000, 1000
    r = _run("llama3-70b", "h200", isl=isl, osl=osl, weights="fp8", concurrency=1)
    dense, _, vocab = mem.model_weight_split(CAT.model("llama3-70b"))
    kv = 2 * 80 * 8 * 128 * 2 * (isl + osl // 2)       # the mean context, 1,500 tokens
    bytes_ = dense * 1 + vocab * 2 + kv
    want = bytes_ / (4.8e12 * e.memory_efficiency) + e.step_overhead_s + e.sequence_overhead_s
    assert float(r.decode_step_s) == pytest.approx(want, rel=1e-6)
    # ~70 GB at 4.8 TB/s: tens of milliseconds, the known single-stream figure
    assert 0.012 < float(r.decode_step_s) < 0.03


@pytest.mark.parametrize("model_id, gpu_id, tp, weights", [
    ("llama3-8b", "h100-sxm", 1, "fp8"),
    ("llama3-70b", "h100-sxm", 4, "bf16"),
    ("qwen3-30b-a3b", "b200", 1, "fp4"),
    ("deepseek-v3", "b200", 8, "fp4"),
    ("gpt-oss-120b", "h100-sxm", 1, "mxfp4"),
])
def test_ttft_tpot_monotone_in_concurrency_and_length(model_id, gpu_id, tp, weights):
    c = 2 ** np.arange(0, 12)
    r = _run(model_id, gpu_id, isl=1024, osl=512, tp=tp, weights=weights, concurrency=c)
    assert np.all(np.diff(r.ttft_s) >= 0) and np.all(np.diff(r.tpot_s) >= 0)
    assert np.all(np.diff(r.output_tokens_per_s_per_gpu[:6]) > 0)   # batching pays at first
    rs = [_run(model_id, gpu_id, isl=s, osl=512, tp=tp, weights=weights, concurrency=64)
          for s in (128, 1024, 8192, 32768)]
    assert all(b.ttft_s > a.ttft_s and b.tpot_s > a.tpot_s for a, b in zip(rs, rs[1:]))
    ro = [_run(model_id, gpu_id, isl=1024, osl=o, tp=tp, weights=weights, concurrency=1)
          for o in (128, 1024, 8192)]
    assert all(b.decode_step_s > a.decode_step_s for a, b in zip(ro, ro[1:]))


def test_tp_shortens_latency_of_a_big_model():
    a = _run("llama3-70b", "h100-sxm", isl=2048, osl=256, tp=2, weights="fp8", concurrency=8)
    b = _run("llama3-70b", "h100-sxm", isl=2048, osl=256, tp=8, weights="fp8", concurrency=8)
    assert b.ttft_s < a.ttft_s and b.tpot_s < a.tpot_s


def test_planner_meets_its_limits_and_looser_limits_never_lose():
    m, g = CAT.model("llama3-70b"), CAT.gpu("h100-sxm")
    up = CAT.fabric(g.scale_up)
    best = []
    for tpot in (15.0, 30.0, 60.0):
        p = serve.plan(Deployment(m, g, up, weights="fp8"), Workload(isl=1000, osl=1000),
                       Search(tpot_ms_max=tpot, ttft_ms_max=2000))
        assert p["feasible"] > 0
        top = p["layouts"][0]
        assert top["tpot_ms"] <= tpot and top["ttft_ms"] <= 2000 and top["fits"]
        best.append(top["output_tokens_per_s_per_gpu"])
    assert best == sorted(best)
    # the unconstrained best of each layout is in the candidates evaluated: 4 tp x (13
    # powers of two + the layout's own most)
    assert p["evaluated"] == 4 * (len(serve.CONCURRENCIES) + 1)


def test_with_no_limit_the_planner_serves_each_layouts_most():
    # powers of two alone missed it: Llama 3 70B BF16 on H100 at TP 4 holds 245 sequences of
    # 2,048 tokens, and serving all of them beats 128 or 256 (which does not fit)
    m, g = CAT.model("llama3-70b"), CAT.gpu("h100-sxm")
    up = CAT.fabric(g.scale_up)
    eng = engines.engine("vllm")
    p = serve.plan(Deployment(m, g, up), Workload(isl=1024, osl=1024))
    top = p["layouts"][0]
    d = Deployment(m, g, up, tp=top["tp"], ep=1)
    most = pr.predict(d, Workload(isl=1024, osl=1024), eng).concurrency
    assert top["concurrency"] == int(most) and top["concurrency"] not in serve.CONCURRENCIES
    for c in serve.CONCURRENCIES[serve.CONCURRENCIES < most]:
        r = pr.predict(d, Workload(isl=1024, osl=1024, concurrency=int(c)), eng)
        assert top["output_tokens_per_s_per_gpu"] >= float(r.output_tokens_per_s_per_gpu)


def test_usd_per_million_tokens_from_the_catalog_price():
    # the review's rule: RunPod's 8x H100 on demand, $21.52 per instance-hour, the cheapest
    # H100 offer (data/prices.csv)
    prices = serve.option_prices(CAT.gpu("h100-sxm"))
    assert prices["on_demand"] == pytest.approx(21.52 / 8)
    # at 1,000 tokens/s per GPU: 6.88 $/h / 3.6 M tokens/h = 1.911 $/M
    assert cost.usd_per_million_tokens(55.04 / 8, 1000) == pytest.approx(6.88 / 3.6)
    assert cost.gpus_for_rate(10, 500, 1000, 8) == 8       # 5,000 tok/s: 5 GPUs -> 1 node


def test_serve_answer_prices_each_option():
    m, g = CAT.model("llama3-8b"), CAT.gpu("h100-sxm")
    out = serve.serve(Deployment(m, g, CAT.fabric(g.scale_up), weights="fp8"),
                      Workload(isl=1000, osl=1000, concurrency=32))
    x = out["output_tokens_per_s_per_gpu"]
    for option, p in serve.option_prices(g).items():
        assert out["usd_per_million_output_tokens"][option] == pytest.approx(p * 1e6 / 3600 / x)
        split = out["usd_per_million_input_tokens_split"][option] * 1000 + \
            out["usd_per_million_output_tokens_split"][option] * 1000
        assert split == pytest.approx(p * 1e6 / 3600 / x * 1000)   # both halves: all the cost


@pytest.mark.slow
def test_grid_catalog_models_gpus_formats_finite():
    n = 0
    for mid in CAT.ids("models"):
        m = CAT.model(mid)
        for gid in ("a100-80gb", "h100-sxm", "h200", "b200", "gb200", "mi300x", "l40s"):
            g = CAT.gpu(gid)
            tps = [t for t in (1, 2, 4, 8) if t <= g.scale_up_domain and m.heads % t == 0]
            for fmt in ("bf16", "fp8", "int4", "fp4"):
                r = pr.predict(Deployment(m, g, CAT.fabric(g.scale_up), tp=np.array(tps),
                                          weights=fmt), Workload(isl=1024, osl=256),
                               engines.engine("vllm"))
                for x in r[:8]:
                    assert np.all(np.isfinite(np.asarray(x, dtype=float)))
                n += 1
    assert n > 300


MODULES = [mem, lat, cost]


@pytest.mark.parametrize("func", [f for m in MODULES for n, f in inspect.getmembers(
    m, inspect.isfunction) if f.__module__ == m.__name__ and not n.startswith("_")
    and inspect.getdoc(f).count("\n") > 5], ids=lambda f: f.__name__)
def test_formula_docstrings(func):
    doc = inspect.getdoc(func)
    for section in ("Parameters", "Returns", "References"):
        assert re.search(rf"^{section}\n-+$", doc, re.M), section
    assert ".. math::" in doc
    assert re.search(r"\[[^\]]+\]", doc.split("Returns")[1])


def test_mla_attention_dp_multiplies_the_cache():
    # MLA's latent is whole on every TP rank: TP attention over 8 GPUs caches each sequence 8
    # times; DP attention caches it once, at the price of replicating the 15.3e9 dense
    # weights (FP8: 15.3 GB more per GPU of the 141 GiB H200) -> between 4x and 8x sequences
    m, g = CAT.model("deepseek-v3"), CAT.gpu("h200")
    d = Deployment(m, g, CAT.fabric(g.scale_up), tp=8, weights="fp8", engine="sglang")
    w, sglang = Workload(isl=1000, osl=1000), engines.engine("sglang")
    tp_ = pr.predict(d, w, sglang)
    dp = pr.predict(replace(d, attention_dp=True), w, sglang)
    assert not tp_.attention_dp and dp.attention_dp
    assert 4 < float(dp.max_concurrency / tp_.max_concurrency) < 8
    assert float(dp.weights_bytes_per_gpu - tp_.weights_bytes_per_gpu) == pytest.approx(
        mem.model_weight_split(m)[0] * 7 / 8, rel=1e-9)


def test_pareto_front_by_hand():
    # (latency, throughput): b beats a on both; c is slower and no faster than b; d trades
    lat_ = [10, 8, 12, 20, 20]
    x = [100, 150, 140, 300, 250]
    assert list(serve.pareto_front(lat_, x)) == [1, 3]
    assert list(serve.pareto_front([1, 2], [5, -np.inf])) == [0]


def test_plan_front_is_feasible_and_monotone():
    m, g = CAT.model("llama3-8b"), CAT.gpu("h100-sxm")
    p = serve.plan(Deployment(m, g, CAT.fabric(g.scale_up), weights="fp8"),
                   Workload(isl=1000, osl=1000))
    f = p["pareto"]
    assert len(f) >= 3
    tpot = [q["tpot_ms"] for q in f]
    x = [q["output_tokens_per_s_per_gpu"] for q in f]
    assert tpot == sorted(tpot) and x == sorted(x)
    assert x[-1] == pytest.approx(p["layouts"][0]["output_tokens_per_s_per_gpu"])


def test_plan_moe_with_dp_attention_caps_running_sequences_per_gpu():
    # TensorRT-LLM runs MoE models with DP attention: its cap of 2048 running sequences is
    # per attention rank, so an 8-GPU instance may run 8 x 2048
    m, g = CAT.model("deepseek-v3"), CAT.gpu("b200")
    p = serve.plan(Deployment(m, g, CAT.fabric(g.scale_up), weights="fp4", engine="trtllm"),
                   Workload(isl=1000, osl=1000), Search(tpot_ms_max=40))
    assert p["feasible"] > 0
    for q in p["layouts"]:
        assert q["attention_dp"] and q["concurrency"] <= 2048 * q["tp"] and q["tpot_ms"] <= 40


def test_a_benchmark_at_a_concurrency_is_simulated_and_its_first_wave_waits():
    # N prompts at a client concurrency C: the first C arrive together and queue behind one
    # another's prefill chunks, so the benchmark's mean TTFT is above the steady loop's; its
    # TPOT is the decode of about C sequences, near the steady one
    a = _run("llama3-8b", "h100-sxm", isl=1000, osl=500, concurrency=64)
    b = _run("llama3-8b", "h100-sxm", isl=1000, osl=500, concurrency=64, requests=640)
    assert a.load_shape == "steady" and b.load_shape == "concurrency"
    assert float(b.ttft_s) > float(a.ttft_s)
    assert float(b.tpot_s) == pytest.approx(float(a.tpot_s), rel=0.15)
    assert float(b.running_batch) == pytest.approx(64, rel=0.1)

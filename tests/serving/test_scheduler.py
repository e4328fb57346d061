"""Continuous batching step by step (llmcost.serving.scheduler): each figure derived here by
hand from a step cost that is linear in its prompt tokens and its decodes."""

import numpy as np
import pytest

from llmcost import catalog
from llmcost._validate import InputError
from llmcost.serving import engines
from llmcost.serving import predict as pr
from llmcost.serving import scheduler as sc
from llmcost.serving.deployment import Deployment, Workload

CAT = catalog.default()
#: a step: 10 ms fixed, 0.1 ms per prompt token, 1 ms per decoding sequence
FIXED, PER_TOKEN, PER_SEQ = 0.01, 1e-4, 1e-3


def cost(n_p, b):
    return FIXED + PER_TOKEN * np.asarray(n_p) + PER_SEQ * np.asarray(b)


def test_one_request_at_a_time():
    # C = 1: the prompt (100 tokens, within the budget) is one step, then o - 1 decode steps
    r = sc.simulate(cost, sc.Requests(isl=100, osl=11, n_requests=3, concurrency=1),
                    sc.Batching(max_running=8, token_budget=8192, kv_capacity_tokens=10**6))
    prefill = FIXED + 100 * PER_TOKEN
    decode = FIXED + PER_SEQ
    assert float(r.ttft_s) == pytest.approx(prefill)
    assert float(r.tpot_s) == pytest.approx(decode)
    assert float(r.latency_s) == pytest.approx(prefill + 10 * decode)
    assert float(r.queue_s) == pytest.approx(0.0)
    assert float(r.duration_s) == pytest.approx(3 * (prefill + 10 * decode))


def test_a_burst_runs_what_the_kv_cache_admits_and_queues_the_rest():
    # 8 prompts at once; the KV cache holds 4 requests of 100 + 11 tokens: two waves. Wave 1:
    # one prompt step of 400 tokens, then 10 decode steps of 4; wave 2 is admitted when wave 1
    # frees its KV, and runs the same
    r = sc.simulate(cost, sc.Requests(isl=100, osl=11, n_requests=8),
                    sc.Batching(max_running=256, token_budget=8192, kv_capacity_tokens=4 * 111))
    prefill = FIXED + 400 * PER_TOKEN            # 0.05 s
    decode = FIXED + 4 * PER_SEQ                 # 0.014 s
    wave = prefill + 10 * decode                 # 0.19 s
    assert float(r.ttft_s) == pytest.approx((prefill + (wave + prefill)) / 2)
    assert float(r.queue_s) == pytest.approx((0 + wave) / 2)
    assert float(r.tpot_s) == pytest.approx(decode)
    assert float(r.running_batch) == pytest.approx(4 * 20 * decode / (2 * wave))
    assert float(r.duration_s) == pytest.approx(2 * wave)
    assert float(r.achieved_requests_per_s) == pytest.approx(8 / (2 * wave))


def test_the_token_budget_chunks_prompts_behind_the_running_decodes():
    # budget 150 tokens: 2 prompts of 100 at once take two steps for the first (its 100 tokens
    # in step 1 beside 50 of the second) and the second finishes its prompt in step 2
    r = sc.simulate(cost, sc.Requests(isl=100, osl=2, n_requests=2),
                    sc.Batching(max_running=8, token_budget=150, kv_capacity_tokens=10**6))
    s1 = FIXED + 150 * PER_TOKEN                 # prompt 1 whole, 50 of prompt 2
    s2 = FIXED + 50 * PER_TOKEN + 1 * PER_SEQ    # rest of prompt 2 beside decode 1
    s3 = FIXED + 1 * PER_SEQ                     # decode of request 2
    assert float(r.ttft_s) == pytest.approx((s1 + (s1 + s2)) / 2)
    assert float(r.latency_s) == pytest.approx(((s1 + s2) + (s1 + s2 + s3)) / 2)


def test_a_rate_below_saturation_keeps_the_queue_short_and_above_it_the_queue_grows():
    # saturation: at its most running (cap 8, memory ample) each step decodes 8 and prefills
    # 8 x 200 / 50 prompt tokens of the replacing requests, and a request lives 50 steps
    isl, osl, cap = 200, 50, 8
    t_p = FIXED + isl * PER_TOKEN
    tau = FIXED + PER_TOKEN * cap * isl / osl + PER_SEQ * cap * (osl - 1) / osl
    sat = cap / (osl * tau)
    assert float(sc.saturation_requests_per_s(cost, isl=isl, osl=osl, running=cap,
                                              token_budget=8192)) == pytest.approx(sat)
    rates = np.array([0.3, 0.6, 0.9, 1.5]) * sat
    batching = sc.Batching(max_running=cap, token_budget=8192, kv_capacity_tokens=10**6)
    small = sc.simulate(cost, sc.Requests(isl=isl, osl=osl, n_requests=200,
                                          arrivals_s=sc.poisson_arrivals_s(rates, 200)),
                        batching)
    big = sc.simulate(cost, sc.Requests(isl=isl, osl=osl, n_requests=400,
                                        arrivals_s=sc.poisson_arrivals_s(rates, 400)),
                      batching)
    # TTFT and the queue rise with the rate
    assert np.all(np.diff(small.ttft_s) > 0) and np.all(np.diff(small.queue_s) >= 0)
    # below saturation the wait does not grow with the run's length; above it, it does
    assert big.queue_s[0] == pytest.approx(small.queue_s[0], abs=t_p)
    assert big.queue_s[-1] > 1.5 * small.queue_s[-1]
    # and the instance completes no more than it sustains
    assert big.achieved_requests_per_s[-1] <= 1.05 * sat


def test_through_predict_a_rate_sweep_names_its_saturation():
    g = CAT.gpu("h100-sxm")
    r = pr.predict(Deployment(CAT.model("llama3-8b"), g, CAT.fabric(g.scale_up)),
                   Workload(isl=1000, osl=200, request_rate=np.array([1.0, 4.0, 16.0, 64.0]),
                            requests=300), engines.engine("vllm"))
    assert r.load_shape == "rate"
    assert np.all(np.diff(r.ttft_s) > 0) and np.all(np.diff(r.queue_s) >= 0)
    sat = float(np.asarray(r.saturation_requests_per_s).flat[0])
    # the last rate is beyond saturation: the achieved rate stops at about it
    assert 16.0 < sat < 64.0
    assert float(r.achieved_requests_per_s[-1]) == pytest.approx(sat, rel=0.25)


def test_bad_load_inputs_name_their_key():
    with pytest.raises(InputError) as e:
        sc.poisson_arrivals_s(0.0, 10)
    assert e.value.param == "request_rate"
    with pytest.raises(InputError) as e:
        sc.simulate(cost, sc.Requests(isl=10, osl=2, n_requests=0),
                    sc.Batching(max_running=1, token_budget=10, kv_capacity_tokens=100))
    assert e.value.param == "num_prompts"


def test_a_burst_of_500_long_prompts_runs_the_batch_vllm_admits():
    # Qwen3-32B in BF16 on one H100 with vLLM: 500 prompts of 2,000 tokens, 100 out, sent at
    # once. vLLM runs at most min(max_num_seqs, what its KV cache holds) sequences; the rest
    # wait. The KV cache holds R sequences of 2,100 tokens (max_concurrency), far below
    # max_num_seqs, so the burst decodes about R at a time, each step beside the prompt of a
    # request replacing a finished one: its TPOT is the steady loop's at concurrency R
    g, m, eng = CAT.gpu("h100-sxm"), CAT.model("qwen3-32b"), engines.engine("vllm")
    d = Deployment(m, g, CAT.fabric(g.scale_up), tp=1)
    burst = pr.predict(d, Workload(isl=2000, osl=100, requests=500), eng)
    assert burst.load_shape == "burst" and bool(burst.fits)
    r = int(burst.max_concurrency)
    assert 1 <= r < eng.max_batch
    # R sequences of 2,100 tokens in the KV bytes left beside the weights
    kv_per_seq = float(burst.kv_bytes_per_token) * 2100
    assert r == int((eng.memory_fraction * g.memory_bytes - float(burst.weights_bytes_per_gpu)
                     - float(burst.activation_bytes_per_gpu)) // kv_per_seq)
    steady = pr.predict(d, Workload(isl=2000, osl=100, concurrency=r), eng)
    assert float(burst.tpot_s) == pytest.approx(float(steady.tpot_s), rel=0.15)
    # the decode batch: R running, less the step each spends on its prompt (1 of 100), the
    # start (the first R prompts, 4 to a step of 8,192 tokens, decode nothing) and the tail
    assert float(burst.running_batch) == pytest.approx(r * 99 / 100, rel=0.2)
    # the queue: request i waits for about i / R lifetimes of the batch
    life = float(steady.latency_s)
    assert float(burst.queue_s) == pytest.approx((500 / r - 1) / 2 * life, rel=0.25)


def test_serve_names_the_rate_beyond_which_the_queue_grows():
    # one instance of Llama 3 8B on an H100; traffic as arrivals per instance: below the
    # saturation rate the answer's queue is short, above it the note names the rate
    from llmcost.serving import query
    base = "model=llama3-8b&gpu=h100-sxm&tp=1&isl=1000&osl=200&concurrency=32&num_prompts=300"
    sat = query.answer(base)["saturation_requests_per_s"]
    rate = float(f"{0.5 * sat:.6g}")
    low = query.answer(base + f"&requests_per_s={rate}")
    assert low["gpus_needed"] >= 1
    per = low["arrivals"]["requests_per_s_per_instance"]
    assert per == pytest.approx(rate / low["gpus_needed"], rel=1e-9)
    assert not any("grows without bound" in n for n in low["notes"])
    s = sat
    # one instance asked to take twice what it sustains
    from llmcost.serving.serve import serve
    g = CAT.gpu("h100-sxm")
    hot = serve(Deployment(CAT.model("llama3-8b"), g, CAT.fabric(g.scale_up), tp=1),
                Workload(isl=1000, osl=200, request_rate=2 * s, requests=300))
    assert hot["load_shape"] == "rate"
    assert any("grows without bound" in n and f"{hot['saturation_requests_per_s']:.3g}" in n
               for n in hot["notes"])
    assert hot["queue_ms"] > 10 * low["arrivals"]["queue_ms"]


def test_ttft_percentiles_carry_the_request_overhead_the_mean_carries():
    # one request at a time: every request's TTFT is the same, so the mean, the median and
    # the 99th percentile are one figure, the engine's request overhead included in each
    eng = engines.resolve("sglang", CAT.gpu("h100-sxm"), 1)
    assert eng.request_overhead_s > 0.05
    m, g = CAT.model("llama3-8b"), CAT.gpu("h100-sxm")
    p = pr.predict(Deployment(m, g, CAT.fabric(g.scale_up), tp=1, engine="sglang"),
                   Workload(isl=1000, osl=50, concurrency=1, requests=4), eng)
    assert float(p.ttft_p50_s) == pytest.approx(float(p.ttft_s), rel=1e-9)
    assert float(p.ttft_p99_s) == pytest.approx(float(p.ttft_s), rel=1e-9)
    assert float(p.ttft_s) > eng.request_overhead_s

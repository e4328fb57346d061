"""`make bench`: one table of timings. Speed lives here, never in tests."""

from __future__ import annotations

import platform
import statistics
import time

import numpy as np

from llmcost import catalog
from llmcost.training import flops as fl
from llmcost.training import memory as mem
from llmcost.training.layout import Layout

ROWS: list[tuple[str, int, float, str]] = []


def timed(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def layouts_1m(model, n=1_000_000, seed=0):
    """n random valid layouts of ``model`` (GPT-3 175B) as arrays."""
    rng = np.random.default_rng(seed)
    tp = rng.choice([1, 2, 4, 8], n)
    pp = rng.choice([d for d in range(1, 97) if 96 % d == 0], n)
    dp = rng.choice([1, 2, 4, 8, 16, 32], n)
    return dict(
        gpus=tp * pp * dp, tp=tp, pp=pp, zero_stage=rng.integers(0, 4, n),
        micro_batch=rng.choice([1, 2, 4], n),
        recompute=rng.choice(np.array(["none", "selective", "full"]), n),
        sequence_parallel=rng.random(n) < 0.5, flash_attention=rng.random(n) < 0.5,
    )


def bench_memory_and_flops():
    m = catalog.model("gpt3-175b")
    L = layouts_1m(m)
    n = len(L["tp"])

    def run():
        b = mem.memory_per_gpu(m, Layout(**L, global_batch=None))
        f = fl.flops_per_token(m.shape, m.seq_len, L["recompute"])
        assert b.total_bytes.shape == f.shape == (n,)

    t = timed(run)
    ROWS.append(("memory + FLOPs, GPT-3 175B, one vectorized call", n, t, f"{n / t:,.0f} layouts/s"))

    # baseline beside it: the same functions called once per layout in a Python loop
    k = 2000
    idx = np.arange(k)

    def loop():
        for i in idx:
            mem.memory_per_gpu(m, Layout(**{key: val[i] for key, val in L.items()}, global_batch=None))
            fl.flops_per_token(m.shape, m.seq_len, str(L["recompute"][i]))

    tl = timed(loop, repeat=1)
    ROWS.append(("same, Python loop per layout (baseline)", k, tl, f"{k / tl:,.0f} layouts/s; "
                 f"vectorized is {(n / t) / (k / tl):,.0f}x"))


def bench_planner():
    from llmcost.training import planner
    from llmcost.training.arch import ModelSpec
    from llmcost.training.hardware import Hardware
    cat = catalog.default()
    m = ModelSpec(layers=96, hidden=12288, heads=96, vocab=51200, seq_len=2048, id="gpt3-175b")
    args = (m, Hardware(cat.gpu("a100-80gb"), cat.fabric("nvlink3"), cat.fabric("ib-hdr")), 1024,
            1536)
    result = {}

    def run():
        result["plan"] = planner.plan(*args)

    t = timed(run)
    P = result["plan"]
    ROWS.append(("planner, GPT-3 175B on 1024 A100-80GB, batch 1536", P.evaluated, t,
                 f"{P.evaluated / t:,.0f} layouts/s; {P.feasible:,} fit; grid {P.candidates:,}"))
    # Calculon's published speed is ~133 layouts/s in Python: the same space would take
    ROWS.append(("  same space at Calculon's ~133 layouts/s (estimate)", P.evaluated,
                 P.evaluated / 133, f"{(P.evaluated / t) / 133:,.0f}x slower than llmcost"))
    # an MoE model: expert parallelism is one more searched dimension
    moe = cat.model("qwen3-235b-a22b")
    b200 = cat.gpu("b200")

    def run_moe():
        result["moe"] = planner.plan(moe, Hardware(b200, cat.fabric(b200.scale_up),
                                                   cat.fabric("ib-ndr")),
                                     256, 1024, planner.Search(precision="mxfp8"))

    t = timed(run_moe)
    P = result["moe"]
    ROWS.append(("planner, Qwen3-235B-A22B on 256 B200, EP searched", P.evaluated, t,
                 f"{P.evaluated / t:,.0f} layouts/s; {P.feasible:,} fit"))


def bench_sizing():
    from llmcost.planning import sizing
    from llmcost.training.hardware import Hardware
    cat = catalog.default()
    m, g = cat.model("llama3-405b"), cat.gpu("h100-sxm")
    args = (m, Hardware(g, cat.fabric("nvlink4"), cat.fabric("ib-ndr")), sizing.Target(90, 15e12))
    result = {}

    def run():
        result["s"] = sizing.size_cluster(*args)

    run()          # numpy's first calls and the catalog out of the timing
    t = timed(run)
    S = result["s"]
    met = f"{S.gpus:,} GPUs meet it" if S.meets_target else \
        f"not met (fastest {S.nearest.fastest_days:.0f} days)"
    # Target's default batch, 4M tokens (512 sequences of 8,192), as Llama 3 started
    ROWS.append(("sizing, Llama 3.1 405B, 15T tokens in 90 days, 4M-token batch", len(S.table), t,
                 f"{len(S.table) / t:,.0f} sizes/s; {met}"))


def bench_spot_monte_carlo():
    from llmcost.economics import spot
    n = 100_000
    out = {}

    def run():
        out["mc"] = spot.spot_monte_carlo(spot.SpotMarket(0.6, 2.4), 24 * 18, checkpoint_interval_h=3.0,
                                          failures=spot.RunFailures(restart_h=0.25), runs=n)

    t = timed(run)
    closed = float(spot.spot_net_savings(spot.SpotMarket(0.6, 2.4), 1.5,
                                         spot.RunFailures(restart_h=0.25)).spot_cost_share)
    err = out["mc"].cost_share.mean() / closed - 1
    ROWS.append(("spot Monte Carlo, 100,000 runs in one pass", n, t,
                 f"{n / t:,.0f} runs/s; mean vs closed form {err:+.2%}"))


CHANGES = {   # app name (registry) -> (control, values it cycles through)
    "review": ("gpus", [512, 768, 1024, 2048]),
    "utilization": ("measured_wall_clock_s", [8000.0, 10000.0, 12000.0, 15000.0]),
    "tco": ("utilization", [0.5, 0.7, 0.8, 0.9]),
    "spot": ("preemptions_per_day", [0.5, 1.0, 2.4, 4.0]),
    "sizing": ("gpus", [512, 768, 1024, 2048]),
    "checkpoints": ("checkpoint_mode", ["async", "sync"]),
    "serving": ("concurrency", [16, 64, 128, 0]),
}


def bench_review():
    """The whole review chain per scenario, cache cleared: gpus mode and days mode."""
    from llmcost.review import chain, evaluate
    from llmcost.scenario import Scenario
    cat = catalog.default()
    for mode, label in (("gpus", "a given cluster"), ("days", "sized by target days")):
        scenarios = [Scenario(model=m, sizing=mode, gpus=512, target_days=30)
                     for m in ("llama3-8b", "llama3-70b", "llama2-70b", "gpt3-175b", "llama3-405b")]

        def run():
            for sc in scenarios:
                chain._CACHE.clear()
                evaluate(sc, cat)

        t = timed(run)
        ROWS.append((f"review chain, {label} (5 models, cache cleared)", len(scenarios), t,
                     f"{t / len(scenarios) * 1e3:,.0f} ms per scenario"))


def bench_apps(rounds=5):
    from llmcost.apps.registry import app
    from llmcost.apps.sizing_app import SizingApp
    from llmcost.review import chain
    for name, (field, values) in CHANGES.items():
        panel = app(name)(query="")
        panel.timings.clear()
        for _ in range(rounds):
            for x in values:
                chain._CACHE.clear()      # measure the computation, not the cache
                panel.set(**{field: x})
        t = np.array(panel.timings)
        ROWS.append((f"app {panel.name}: control change -> figures updated", len(t),
                     float(np.median(t)), f"p50 {np.median(t) * 1e3:,.0f} ms, "
                                          f"p95 {np.percentile(t, 95) * 1e3:,.0f} ms"))
    # the sizing app's days-vs-GPUs curve is one sweep over every size, which the GPU count
    # does not change (sizing by days ignores it): the row above recomputes it at every
    # change (a model change does), this one keeps it as the app does for a GPU count
    panel = SizingApp(query="")
    panel.timings.clear()
    for _ in range(rounds):
        for x in CHANGES["sizing"][1]:
            for key in [k for k in chain._CACHE if k[1].sizing != "days"]:
                del chain._CACHE[key]
            panel.set(gpus=x)
    t = np.array(panel.timings)
    ROWS.append(("app sizing: GPU count change, its sweep kept", len(t), float(np.median(t)),
                 f"p50 {np.median(t) * 1e3:,.0f} ms, p95 {np.percentile(t, 95) * 1e3:,.0f} ms"))


def bench_voila():
    """First paint and load of the review app in chromium, today's layout beside the
    workbook's and Binder's (benchmarks/load.py)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import load
    if not Path(load.CHROMIUM).exists():
        ROWS.append((f"voila load: {load.CHROMIUM} missing (apt-get install chromium)", 0, 0.0, "not run"))
        return
    ROWS.extend(load.rows(load.run()))


#: width of the benchmark column: rows print as each section ends, before the next runs
NAME_WIDTH = 58


def _print_new_rows(shown: int) -> int:
    """Print the rows added since ``shown``; the count printed so far."""
    for name, n, t, res in ROWS[shown:]:
        print(f"{name:<{NAME_WIDTH}}  {n:>10,}  {t:>8.3f}  {res}", flush=True)
    return len(ROWS)


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--no-browser", action="store_true",
                    help="leave out the Voila load in chromium (several minutes)")
    a = ap.parse_args(argv)
    sections = [bench_memory_and_flops, bench_planner, bench_sizing, bench_spot_monte_carlo,
                bench_review, bench_apps] + ([] if a.no_browser else [bench_voila])
    print(f"llmcost benchmarks  ({platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}, {platform.machine()})")
    print(f"{'benchmark':<{NAME_WIDTH}}  {'n':>10}  {'seconds':>8}  result", flush=True)
    shown = 0
    for section in sections:
        section()
        shown = _print_new_rows(shown)


if __name__ == "__main__":
    main()

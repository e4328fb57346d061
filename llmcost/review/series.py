"""Series behind the apps' plots, computed from a Results object (and cached on it): a plot
draws these, it never runs a model itself."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np
import pandas as pd

from .. import utilization as ut
from ..economics import reliability as rel
from ..economics import spot, storage, tco
from ..planning import planner
from ..scenario import Scenario
from ..training.hardware import Hardware
from ..training.layout import Layout
from ..training.memory import memory_per_gpu
from .results import Results
from .stages import NODE_NETWORK_GB_PER_S, REVIEW_MEMORY, options_for
from .storage_view import KEEP_LOCAL, KEEP_WARM, storage_summary


def _cached(fn):
    def wrapper(results: Results, *a, **kw):
        key = (fn.__name__, a, tuple(sorted(kw.items())))
        if key not in results._series:
            results._series[key] = fn(results, *a, **kw)
        return results._series[key]
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@_cached
def layout_memory(results: Results, top: int = 5) -> pd.DataFrame:
    """Memory per GPU by component for the top layouts, each as the planner predicted it:
    its Layout (stage split, precision, memory recipe) and the review's memory options, in
    one vectorized call per memory recipe."""
    m = results.inputs.model
    L = results.plan.layouts.head(top)
    if L.empty:
        return pd.DataFrame()
    B = results.plan.global_batch
    # a layout's recipe is one value per call of memory_per_gpu; the rest vectorizes
    recipe = ("recompute_modules", "optimizer_moments", "precision")
    # the fields the memory model does not read stay out of the arrays
    unread = ("middle_stage_layers", "tp_comm_overlap")
    lays = [Layout.from_row(r, global_batch=B) for _, r in L.iterrows()]
    opts = replace(REVIEW_MEMORY, moe_capacity_factor=options_for(
        results.scenario).moe_load_imbalance if m.is_moe else None)
    rows = {}
    for key in dict.fromkeys(tuple(getattr(x, k) for k in recipe) for x in lays):
        at = [i for i, x in enumerate(lays) if tuple(getattr(x, k) for k in recipe) == key]
        cols = {f.name: np.array([getattr(lays[i], f.name) for i in at]) for f in fields(Layout)
                if f.name not in recipe + unread}
        gb = memory_per_gpu(m, Layout(**cols, **dict(zip(recipe, key))), opts,
                            generation=results.inputs.gpu.generation,
                            stack=results.inputs.stack).to_gb()
        for j, i in enumerate(at):
            rows[i] = {k: float(np.atleast_1d(x)[j]) for k, x in gb.items()}
    df = pd.DataFrame([rows[i] for i in range(len(lays))])
    df.insert(0, "layout", [planner.describe_layout(r) for _, r in L.iterrows()])
    return df


@_cached
def tco_series(results: Results, points: int = 121) -> pd.DataFrame:
    """Cumulative cash cost of each option for this cluster (its billed GPUs) over months."""
    s, e, inp = results.scenario, results.economics, results.inputs
    months = np.linspace(0, s.horizon_months, points)
    if e is None or (e.prices is None and inp.onprem is None):
        return pd.DataFrame({"months": months})
    costs = tco.option_costs_usd(months, s.utilization, e.prices or tco.CloudPrices(), e.onprem,
                                 gpus=e.billed_gpus,
                                 discount_rate=s.discount_rate, resale=s.resale)
    return pd.DataFrame({"months": months,
                         **{k: np.broadcast_to(x, months.shape) for k, x in costs.items()}})


@_cached
def decision_grid(results: Results):
    """Cheapest option over utilization x horizon, in the review's cash convention."""
    s, e, inp = results.scenario, results.economics, results.inputs
    u = np.linspace(0.1, 1.0, 19)
    m = np.array([3, 6, 9, 12, 18, 24, 36, 48, 60])
    if e is None or (e.prices is None and inp.onprem is None):
        return u, m, (), np.zeros((len(u), len(m)), int)
    names, best, _ = tco.decision_map(u, m, e.prices or tco.CloudPrices(), e.onprem,
                                      discount_rate=s.discount_rate,
                                      resale=s.resale)
    return u, m, names, best


@_cached
def breakeven_tornado(results: Results, swing: float = 0.2) -> pd.DataFrame:
    """Breakeven month when each input moves +-swing (the rest held): a tornado chart."""
    s, inp, e = results.scenario, results.inputs, results.economics
    if e is None or e.breakeven_months is None or inp.onprem is None or e.prices is None:
        return pd.DataFrame(columns=["input", "low", "high", "base", "span"])
    base_prem, price = inp.onprem, e.prices.on_demand

    def be(price=price, capex=base_prem.capex_usd, u=s.utilization, **prem):
        op = replace(base_prem, **prem)
        u = min(1.0, u)
        m = float(tco.breakeven_months(price, capex, u, float(tco.onprem_opex_usd_per_gpu_month(op, u)),
                                       s.discount_rate))
        return m if math.isfinite(m) else np.nan

    cur = {"cloud price": ("price", price), "capex per GPU": ("capex", base_prem.capex_usd),
           "utilization": ("u", s.utilization),
           "power per GPU": ("power_w_per_gpu", base_prem.power_w_per_gpu),
           "electricity price": ("usd_per_kwh", base_prem.usd_per_kwh), "PUE": ("pue", base_prem.pue)}
    rows = []
    for label, (k, val) in cur.items():
        lo_v, hi_v = val * (1 - swing), val * (1 + swing)
        if k == "pue":
            lo_v = max(1.0, lo_v)
        rows.append({"input": label, "low": be(**{k: lo_v}), "high": be(**{k: hi_v}),
                     "base": e.breakeven_months})
    df = pd.DataFrame(rows)
    df["span"] = (df["high"] - df["low"]).abs()
    return df.sort_values("span").reset_index(drop=True)


@_cached
def spot_grid(results: Results):
    """Net savings over preemption rate x hours lost, the other terms as in the review."""
    s, r, e = results.scenario, results.reliability, results.economics
    d = e.spot.discount if e is not None and e.spot.discount is not None else None
    rates = np.linspace(0, 6, 61)
    lost = np.linspace(0, 8, 81)
    R, LL = np.meshgrid(rates, lost, indexing="ij")
    sav = np.full(R.shape, np.nan)
    if d is None:
        return rates, lost, sav
    per_event = LL + r.restart_h + s.capacity_wait_h
    ok = (R * per_event + r.failures_per_day * (r.lost_hours_per_interruption + r.restart_h)) < 24
    res = spot.spot_net_savings(spot.SpotMarket(d, R[ok], s.capacity_wait_h), LL[ok],
                                spot.RunFailures(r.restart_h, r.failures_per_day,
                                                 r.lost_hours_per_interruption))
    sav[ok] = res.net_savings
    return rates, lost, sav


@_cached
def spot_distribution(results: Results, runs: int = 20_000, seed: int = 0):
    """Monte Carlo of this run on spot (its useful hours), the same terms as the closed form."""
    s, r, e = results.scenario, results.reliability, results.economics
    if e is None or not e.spot.offered:
        return None
    hours = e.run_hours if e.run_hours else 24 * 18.0
    return spot.spot_monte_carlo(spot.SpotMarket(e.spot.discount, s.preemptions_per_day,
                                                 s.capacity_wait_h),
                                 min(hours, 24 * 3650),
                                 lost_hours_per_preemption=e.spot.lost_hours_per_preemption,
                                 failures=spot.RunFailures(r.restart_h, r.failures_per_day,
                                                           r.lost_hours_per_interruption),
                                 runs=runs, seed=seed)


@_cached
def scaling_series(results: Results, fabrics=("ib-ndr", "roce-400")) -> pd.DataFrame:
    """Predicted MFU and efficiency vs node count for the best layout on each fabric."""
    from ..training.scaling import weak_scaling
    s, inp, L = results.scenario, results.inputs, results.plan.layout
    if L is None:
        return pd.DataFrame()
    cat, m, g = inp.catalog, inp.model, inp.gpu
    # the plan's layout as the headline predicts it (its experts, recipe and stage split),
    # from the fewest whole nodes it fits: GPUs a multiple of tp pp cp and of pp ep etp,
    # which doubling keeps; the plan's own size is a point too, so the own fabric's curve
    # passes through the headline's step time
    need = math.lcm(int(L.tp * L.pp * L.cp), int(L.pp * L.ep * L.etp))
    first = need // math.gcd(need, g.gpus_per_node)
    sizes = {first * 2**k for k in range(0, 9)}
    if L.gpus % g.gpus_per_node == 0:
        sizes.add(L.gpus // g.gpus_per_node)
    nodes = np.array(sorted(sizes))
    seqs = max(1, L.num_microbatches * L.micro_batch)
    out = []
    # the scenario's own fabric as resolved ("auto": the GPU's usual; a custom fabric has no
    # catalog row), then the ones compared
    own = "custom" if s.fabric == "custom" else inp.scale_out.id
    memory = REVIEW_MEMORY
    for f in dict.fromkeys((own, *fabrics)):
        try:
            spec = inp.scale_out if f == own else cat.fabric(f)
            t, _ = weak_scaling(m, Hardware(g, inp.scale_up, spec), nodes, L, seqs,
                                options_for(s), memory=memory)
        except ValueError:
            continue
        t["fabric"] = f
        out.append(t)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


@_cached
def finetune_ladder(results: Results):
    """The fine-tune ladder for the review's model: its pretraining rung is this review's run
    (the days, GPUs and on-demand dollars the page shows)."""
    from .ladder import Pretraining, ladder
    s, inp = results.scenario, results.inputs
    return ladder(inp.model, inp.catalog, s.finetune_tokens, Pretraining(s.tokens, review=results))


#: the sizing plot's days axis stops here: a size that needs more than a century is
#: not a plan, and drawing it squeezes every meaningful size into a corner [days]
MAX_PLOT_DAYS = 100 * 365.25


@_cached
def sizing_series(results: Results, max_days: float = MAX_PLOT_DAYS) -> pd.DataFrame | None:
    r"""Days to train vs GPUs at every size the sizing evaluated, with ``on_scale``: finite
    days of at most ``max_days``; the rest (no layout that fits, or centuries of training) is
    counted by the plot, not drawn.

    ``days`` is the review's "days to train" at each size (the headline's figure where the
    size is the review's: the sizing table's ``days_to_train``); its ``days`` carry the
    schedule headroom h, and a size meets the target when

    .. math:: t(N) \le \frac{t_\mathrm{target}}{1 + h}

    (``days_with_headroom`` = t(N) (1 + h)). A review sized by GPUs has no sizing table of
    its own: the table is then the one of the same scenario sized by its target days
    (:func:`sizing_sweep`), so the curve shows every size around the one chosen; None when
    sizing by days refuses the scenario.

    Returns
    -------
    DataFrame or None
        gpus [-], days [days] (NaN: no layout), days_with_headroom [days], on_scale [bool].
    """
    size = sizing_sweep(results)
    if size is None:
        return None
    t = size.sizing.table
    days = t["days_to_train"].to_numpy(dtype=float)
    return pd.DataFrame({"gpus": t["gpus"].to_numpy(), "days": days,
                         "days_with_headroom": t["days"].to_numpy(dtype=float),
                         "on_scale": np.isfinite(days) & (days <= max_days)})


def sizing_sweep(results: Results):
    """The size stage's result for this scenario sized by its target days (its own when it
    is): days at every candidate size, from the same models as the review's days.

    A review sized by GPUs evaluates the scenario with ``sizing="days"`` (the cached chain,
    :func:`llmcost.review.evaluate`) at the batch the review runs (the batch law's, or the
    one that fills its GPUs: :mod:`llmcost.review.fill`), so the curve passes through the
    review's point; the GPU count is set to the default there, since sizing by days does not
    read it, so moving the GPU count reuses one sweep while the batch stays.

    Returns
    -------
    SizeResult or None
        None when sizing by days refuses the scenario (the review by GPUs keeps its point).
    """
    if results.size is not None:
        return results.size
    from .chain import evaluate
    s = results.scenario
    try:
        sized = replace(s, sizing="days", gpus=Scenario.__dataclass_fields__["gpus"].default)
        if results.plan.global_batch:
            sized = replace(sized, batch="custom", global_batch_tokens=float(
                results.plan.global_batch * results.inputs.model.seq_len))
        return evaluate(sized, results.inputs.catalog).size
    except ValueError:   # a scenario sizing refuses: the review by GPUs stands without a curve
        return None


#: goodput curves: one per checkpoint mode (storage.checkpoint_goodput)
GOODPUT_MODES = ("sync", "async", "peer-memory")


@_cached
def goodput_series(results: Results, points: int = 200) -> pd.DataFrame:
    """Goodput vs checkpoint interval for sync, async and peer-memory checkpoints, at this size.

    One row per (interval, mode), the modes' curves from
    :func:`llmcost.economics.storage.checkpoint_goodput` with the review's stalls and upload
    (:func:`storage_figures`), so the scenario's mode at its chosen interval is the review's
    goodput. The grid spans the modes' recommended intervals and the upload (x/20 to x20)
    and contains the chosen interval, each mode's recommended interval and the upload
    exactly.

    Peer-memory (GEMINI) is drawn under stated assumptions: the blocking part and the copy
    to the peer's memory both take the async local stall (``peer_copy_s``), and every
    failure leaves each snapshot's peer alive (``peer_share`` = 1).

    Returns
    -------
    DataFrame
        interval_s [s], mode, goodput [-], stall_s [s], upload_s [s], peer_copy_s [s],
        chosen_mode (the scenario's mode) and, as before, the wide columns sync and async
        (goodput at that row's interval [-]) and sync_stall_s, async_stall_s [s].

    References
    ----------
    .. [1] Daly 2006, FGCS 22(3):303, Eq. 13-14; :mod:`llmcost.economics.storage`
       (durable interval, rework from the last durable copy); Wang et al., SOSP 2023 (GEMINI).
    """
    f, r, s = storage_figures(results), results.reliability, results.scenario
    M = r.job_mtbf_h * 3600
    upload, sync_stall, async_stall = f["upload_s"], f["sync_stall_s"], f["async_stall_s"]
    marks = [f["by_mode"][m]["interval_s"] for m in ("sync", "async")] + [r.interval_s]
    span = [float(rel.daly_interval_s(x, M)) for x in (sync_stall, async_stall)] + [upload]
    lo, hi = max(min(span + marks) / 20, 1.0), max(span + marks) * 20
    taus = np.unique(np.concatenate([np.geomspace(lo, hi, points), marks,
                                     [upload] if upload > 0 else []]))
    terms = {"sync": dict(stall_s=sync_stall, upload_s=0.0, peer_copy_s=0.0),
             "async": dict(stall_s=async_stall, upload_s=upload, peer_copy_s=0.0),
             "peer-memory": dict(stall_s=async_stall, upload_s=upload, peer_copy_s=async_stall)}
    parts = []
    for mode in GOODPUT_MODES:
        t = terms[mode]
        good = storage.checkpoint_goodput(mode, taus, t["stall_s"], M, r.restart_h * 3600,
                                          t["upload_s"],
                                          storage.PeerCopies(t["peer_copy_s"], peer_share=1.0))
        parts.append(pd.DataFrame({"interval_s": taus, "mode": mode,
                                   "goodput": np.asarray(good, float), **t,
                                   "chosen_mode": mode == s.checkpoint_mode}))
    df = pd.concat(parts, ignore_index=True)
    wide = {m: df.loc[df["mode"] == m, "goodput"].to_numpy() for m in ("sync", "async")}
    for m in ("sync", "async"):
        df[m] = np.tile(wide[m], len(GOODPUT_MODES))
    df["sync_stall_s"], df["async_stall_s"] = sync_stall, async_stall
    return df


@_cached
def storage_figures(results: Results) -> dict:
    """:func:`llmcost.review.storage_view.storage_summary` of these Results (cached on them),
    plus ``durable_interval_s``: compute between durable snapshots of the scenario's mode
    [s] (async: never shorter than the upload, :func:`storage.durable_interval_s`)."""
    out = dict(storage_summary(results))
    up = out["upload_s"] if out["checkpoint_mode"] == "async" else 0.0
    out["durable_interval_s"] = float(storage.durable_interval_s(out["interval_s"], up))
    return out


@_cached
def storage_tiers(results: Results) -> pd.DataFrame:
    """What each storage tier must carry (:func:`storage_figures` ``tiers``), one row per tier.

    Returns
    -------
    DataFrame
        tier, role, per (node or aggregate), checkpoints_kept [-], capacity_needed_tb [TB],
        write_burst_needed_gb_per_s, write_average_needed_gb_per_s (NaN when not
        modelled), offered_write_gb_per_s, read_gb_per_s [GB/s], meets_burst, meets_average.
    """
    f = storage_figures(results)
    roles = {"hot": ("local NVMe (async snapshots)", KEEP_LOCAL),
             "warm": ("shared file system", KEEP_WARM)}
    rows = []
    for name, t in f["tiers"].items():
        role, kept = roles.get(name, (name, np.nan))
        rows.append({"tier": name, "role": role, "per": t["per"], "checkpoints_kept": kept,
                     "capacity_needed_tb": t["capacity_tb"],
                     "write_burst_needed_gb_per_s": t["write_burst_gb_per_s"],
                     "write_average_needed_gb_per_s": t.get("write_average_gb_per_s", np.nan),
                     "offered_write_gb_per_s": t["offered_write_gb_per_s"],
                     "read_gb_per_s": t.get("read_gb_per_s", np.nan),
                     "meets_burst": t["meets_burst"], "meets_average": t["meets_average"]})
    return pd.DataFrame(rows)


@_cached
def notice_checks(results: Results) -> pd.DataFrame:
    """Checkpoint-on-notice for one preempted node (:func:`storage.checkpoint_on_notice`):
    its share of the checkpoint written to local NVMe (the scenario's per-node write) or to
    the shared tier (its bandwidth, at most the node's link), against AWS's 2 min and GCP's
    30 s notices. Detection: AWS polled every 5 s as it recommends; GCP's ACPI soft-off
    reaches the guest at once (assumption: 0 s).

    Returns
    -------
    DataFrame
        cloud, notice_s, detect_s [s], target, node_gb [GB], write_gb_per_s [GB/s],
        write_s, slack_s [s], fits.
    """
    notices = (("AWS", storage.AWS_SPOT_NOTICE_S, storage.AWS_NOTICE_POLL_S),
               ("GCP", storage.GCP_SPOT_NOTICE_S, 0.0))
    s, r = results.scenario, results.reliability
    node_bytes = r.checkpoint_bytes / r.nodes
    targets = (("local NVMe", s.local_write_gb_per_s),
               ("shared tier (one node)", min(r.storage_gb_per_s, NODE_NETWORK_GB_PER_S)))
    rows = []
    for target, bw in targets:
        for cloud, notice, detect in notices:
            c = storage.checkpoint_on_notice(node_bytes, bw, notice, detect)
            rows.append({"cloud": cloud, "notice_s": notice, "detect_s": detect,
                         "target": target, "node_gb": node_bytes / 1e9, "write_gb_per_s": bw,
                         "write_s": float(c.write_s), "slack_s": float(c.slack_s),
                         "fits": bool(c.fits)})
    return pd.DataFrame(rows)


#: the cluster guide's storage claims (N. Dixit, "GPU Clusters for LLM Training: A Builder's
#: Guide", SIVARO, 2026)
GUIDE_CHECKPOINTS, GUIDE_STALL_S = 500, (30.0, 60.0)
GUIDE_HOURS, GUIDE_LOCAL_S, GUIDE_LOCAL_MODEL = (5.0, 8.0), (3.0, 5.0), "llama3-70b"


@_cached
def guide_storage_claims(results: Results) -> dict:
    """The cluster guide's "500 checkpoints x 30-60 s = 5-8 h" and "3-5 s local write of a 70B
    checkpoint", worked with the storage functions and this scenario's storage.

    Returns
    -------
    dict
        guide_hours (500 x 30-60 s [h]), guide_stall_for_hours_s (what 5-8 h means per
        checkpoint [s]), shared_gb_per_s_for_guide_stall (the write bandwidth giving a 30-60 s
        sync stall of this checkpoint [GB/s]), run_hours_for_500 (500 x this sync stall [h]);
        and, for the 70B model when the catalog has it: params, full_gb [GB] and
        full_bytes_per_param (weights and Adam state, :func:`storage.checkpoint_size_bytes`),
        one_node_gb_per_s_for_guide (full state on one node in 3-5 s [GB/s]), weights_gb
        (bf16 weights only) and weights_gb_per_s_for_guide [GB/s], nodes_for_guide (nodes,
        sharded, at this scenario's local write, for 5 and 3 s) [-].
    """
    f = storage_figures(results)
    inp, s = results.inputs, results.scenario
    size = results.reliability.checkpoint_bytes
    t = np.array(GUIDE_STALL_S)
    out = {"guide_hours": GUIDE_CHECKPOINTS * t / 3600,
           "guide_stall_for_hours_s": np.array(GUIDE_HOURS) * 3600 / GUIDE_CHECKPOINTS,
           "shared_gb_per_s_for_guide_stall": rel.storage_bandwidth_for_stall_gb_per_s(size, t),
           "run_hours_for_500": GUIDE_CHECKPOINTS * f["sync_stall_s"] / 3600}
    try:
        params = inp.catalog.model(GUIDE_LOCAL_MODEL).params
    except (KeyError, ValueError):
        return out
    full = float(storage.checkpoint_size_bytes(params))
    weights = float(rel.checkpoint_size_bytes(params, "weights-only"))
    secs = np.array(GUIDE_LOCAL_S)
    n = np.arange(1, 100_001)
    stall = rel.checkpoint_stall_s(full, "async", n, rel.CheckpointStorage(
        local_write_gb_per_s=s.local_write_gb_per_s, gpus_per_node=inp.gpu.gpus_per_node))
    nodes = [int(n[np.argmax(stall <= x)]) if (stall <= x).any() else None for x in secs[::-1]]
    out.update(model=GUIDE_LOCAL_MODEL, params=params, full_gb=full / 1e9,
               full_bytes_per_param=full / params,
               one_node_gb_per_s_for_guide=full / secs[::-1] / 1e9, weights_gb=weights / 1e9,
               weights_gb_per_s_for_guide=weights / secs[::-1] / 1e9, nodes_for_guide=nodes)
    return out


@dataclass(frozen=True)
class MeasuredRun:
    """The effective-utilization app's figures for a measured run."""

    effective_utilization: float
    tokens_per_s: float
    flops_per_token: float
    peak_tflops: float
    achieved_tflops_per_gpu: float
    hfu_if_full_recompute: float
    published_mfu: float | None
    findings: tuple
    #: the run measured: its model, tokens trained [tokens], GPUs and wall clock [s]
    model: str
    tokens: float
    gpus: float
    wall_clock_s: float
    #: no figure of the measured run was entered: the run is the Scenario's example
    example: bool = False


def is_example_run(s: Scenario) -> bool:
    """Whether none of the measured run's figures (``measured_*``) was entered: the run
    shown is the Scenario's example, to be labelled as such, never as measured."""
    base = Scenario()
    return all(getattr(s, f.name) == getattr(base, f.name) for f in fields(Scenario)
               if f.name.startswith("measured_"))


def measured_utilization(s: Scenario, cat=None) -> MeasuredRun:
    """The effective-utilization app's numbers for the measured run in the Scenario."""
    from .. import catalog as catalog_mod
    cat = catalog_mod.default() if cat is None else cat
    m, g = cat.model(s.model), cat.gpu(s.gpu)
    fpt = s.measured_flops_per_token or m.flops_per_token("none", int(s.measured_seq_len))
    peak = s.measured_peak_tflops or g.bf16_dense_tflops
    u = float(ut.effective_utilization(fpt, s.measured_global_batch, s.measured_seq_len,
                                       s.measured_steps, peak, s.measured_gpus,
                                       s.measured_wall_clock_s))
    tokens = s.measured_global_batch * s.measured_seq_len * s.measured_steps
    tps = tokens / s.measured_wall_clock_s
    hw = m.flops_per_token("full", int(s.measured_seq_len))
    runs = cat.published_runs()
    same = runs[(runs["model"] == m.id) & runs["mfu"].notna()]
    published = float(same["mfu"].max()) if len(same) else None
    verdict = ut.assess_utilization(u, published=published, peak_tflops=peak, gpu=g)  # BF16 run
    return MeasuredRun(effective_utilization=u, tokens_per_s=tps, flops_per_token=fpt,
                       peak_tflops=peak,
                       achieved_tflops_per_gpu=float(
                           ut.achieved_tflops_per_gpu(tps, fpt, s.measured_gpus)),
                       hfu_if_full_recompute=float(ut.hfu(tps, hw, peak, s.measured_gpus)),
                       published_mfu=published, findings=tuple(verdict.findings), model=m.id,
                       tokens=tokens, gpus=s.measured_gpus, wall_clock_s=s.measured_wall_clock_s,
                       example=is_example_run(s))

"""Findings: a measured figure against its expectation, each threshold with its source.

A finding is ``{"level": "ok" | "warn" | "alert", "what": ..., "evidence": ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v

#: collectives the expectation models (as llmcost.checks.expect.MODELLED)
MODELLED = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")

#: below this share of the expected bus bandwidth at large messages: alert. An 8-GPU H100
#: all-reduce topping out at a third of the expected is an alert, a healthy one is not;
#: half sits between with room for the model's own error.
BUSBW_ALERT_SHARE = 0.5
#: below this share: warn. NVIDIA's guidance for a healthy NDR 400 Gb/s NIC is 46-48 GB/s
#: (A. Ladd, NVIDIA/nccl-tests#290, 2025-03-03), 92-96% of line rate against the model's
#: 90%: 0.8 leaves twice that spread.
BUSBW_WARN_SHARE = 0.8
#: messages from this size on count as large: smaller ones do not reach the peak
#: (S. Jeaugey, NVIDIA/nccl-tests#212: "256M is too small to reach peak bandwidth").
LARGE_MESSAGE_BYTES = 256 * 2 ** 20
#: a collapse: bus bandwidth at a size below this share of the best at any smaller size,
#: counted from 1 MiB on (below, latency dominates). In the alpha-beta model busbw rises
#: with size (S / (alpha + S/B)); nccl-tests doc/PERFORMANCE.md reads busbw as the
#: hardware's peak approached at large sizes. A halving is far outside run-to-run noise.
COLLAPSE_SHARE = 0.5
COLLAPSE_FROM_BYTES = 2 ** 20
#: a dip: bus bandwidth at a size below this share of the best at a smaller size (from
#: 1 MiB), but above the collapse share. Run-to-run noise of nccl-tests is a few percent
#: (the in- and out-of-place columns of the samples differ by up to ~10%); a user reported
#: a dip to about 0.6 x as a problem, so 0.75 flags it with room for noise.
DIP_SHARE = 0.75
#: a shortfall at a mid size: bus bandwidth below this share of the expectation at a size
#: from 1 MiB on. The pastes we were given fell 10-40 x short at mid sizes while the largest size
#: looked fine; the alpha-beta model's own error at mid sizes is well under 2 x, so a tenth
#: of it is far outside what a healthy fabric shows.
MIDSIZE_ALERT_SHARE = 0.1
#: warn below this share of the expectation, per size regime
#: (:data:`llmcost.checks.expect.REGIMES`): 0.8 x the lowest share the healthy samples show in
#: that regime (tests/data/cluster: nccl-tests all-reduce on 2 x 8 H100 over AWS EFA p5, 2 x 8
#: A100 over EFA p4de, 2 x 8 H100 over GCP A3 Mega TCPXO, 2 H100 PCIe; measured by the
#: time nccl-tests prints): latency-bound 0.54 (p5 at 2 MiB), transitional 0.36 (A3 Mega at
#: 16 MiB), bandwidth-bound 0.62 (p5 at 128 MiB). The alpha-beta model rises faster than
#: NCCL's protocols do between 1 and 128 MiB, so a healthy fabric reads lower there; four
#: samples of three fabrics set these, so they warn, never alert.
REGIME_WARN_SHARE = {"latency-bound": 0.8 * 0.54, "transitional": 0.8 * 0.36,
                     "bandwidth-bound": 0.8 * 0.62}
#: what the regime thresholds were set on, as the finding states it
REGIME_SOURCE = ("0.8 x the lowest share of the healthy samples: AWS p5 and p4de, GCP A3 "
                 "Mega, H100 PCIe")
#: measured MFU below this share of the predicted one: alert (40% short is beyond
#: the step model's 25% envelope, llmcost.training.uncertainty.ENVELOPE_BAND).
MFU_ALERT_SHARE = 0.6
#: step-time tail (p95 / median) above this: stragglers. An assumption (no published
#: threshold found): 20%, twice the 10% of a step that the cluster guide
#: ("GPU Clusters for LLM Training: A Builder's Guide", 2026) allows data loading.
TAIL_WARN_RATIO = 1.2
#: a gap between logged steps longer than this multiple of the expected time (median step
#: time x steps between the lines) and at least GAP_MIN_S: lost time (restart, hang,
#: checkpoint stall). An assumption, like the tail's.
GAP_RATIO = 3.0
GAP_MIN_S = 60.0
#: our model TFLOP/s per GPU over the log's own beyond this factor either way: the scenario
#: does not describe the run (sequence length, GPU count, model). Frameworks count attention
#: and the vocabulary projection slightly differently (Megatron's formula against 6N + 12LHQT
#: differ by ~10% at 8k tokens, Narayanan et al. 2021 App. and PaLM App. B), far inside 1.5.
LOG_FLOPS_RATIO = 1.5


#: the share of a step spent waiting for data above which it is a finding: the cluster
#: guide ("GPU Clusters for LLM Training: A Builder's Guide", Monitoring: What to Watch)
#: wants data loading under 10% of the step
DATA_WARN_SHARE = 0.10
#: above this share the step waits for its data longer than it computes: an alert (a
#: derivation, not a published figure)
DATA_ALERT_SHARE = 0.5


def finding(level: str, what: str, evidence: str) -> dict:
    return {"level": level, "what": what, "evidence": evidence}


def _gb(x: float) -> str:
    return f"{x:,.1f} GB/s"


def _size(b: float) -> str:
    for unit, k in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if b >= k:
            return f"{b / k:g} {unit}"
    return f"{b:g} B"


def busbw_findings(op: str, size_bytes, busbw, expected, wrong, ranks, max_error=None) -> list:
    """Findings for one collective's rows (sorted by size): peak against expectation,
    shortfall at mid sizes, collapse and dip, wrong results (a ``#wrong`` count; older
    nccl-tests' ``error`` column, the largest numerical error, is ``max_error`` and only
    reported)."""
    size_bytes, busbw = np.asarray(size_bytes, float), np.asarray(busbw, float)
    expected, wrong = np.asarray(expected, float), np.asarray(wrong, float)
    out = []
    name = f"{op} on {ranks} ranks" if ranks else op
    if max_error is not None and np.isfinite(np.asarray(max_error, float)).any():
        me = float(np.nanmax(np.asarray(max_error, float)))
        out.append(finding("ok", f"{name}: largest numerical error {me:g}",
                           "older nccl-tests print the largest error of the result "
                           "('error' column), not a count of wrong elements: "
                           "rounding of a float reduction, not corruption"))
    bad = np.nan_to_num(wrong) > 0
    if bad.any():
        i = int(np.argmax(bad))
        out.append(finding("alert", f"{name}: wrong results",
                           f"{int(wrong[i])} wrong elements at {_size(size_bytes[i])} "
                           "(nccl-tests' #wrong column): data corruption, not slowness"))
    large = size_bytes >= LARGE_MESSAGE_BYTES
    pool = large if large.any() else np.ones_like(large)
    cand = np.where(pool & np.isfinite(expected), busbw, -np.inf)
    if np.isfinite(cand).any() and cand.max() > -np.inf:
        i = int(np.argmax(cand))
        share = busbw[i] / expected[i] if expected[i] > 0 else np.inf
        where = "" if large.any() else (f" (no message of {_size(LARGE_MESSAGE_BYTES)} or more: "
                                        "the peak may not be reached)")
        ev = (f"top busbw {_gb(busbw[i])} at {_size(size_bytes[i])} = {share:.2f} x the "
              f"expected {_gb(expected[i])}{where}")
        if share < BUSBW_ALERT_SHARE:
            out.append(finding("alert", f"{name}: bus bandwidth far below expectation", ev))
        elif share < BUSBW_WARN_SHARE:
            out.append(finding("warn", f"{name}: bus bandwidth below expectation", ev))
        elif share > 1.15:
            out.append(finding("ok", f"{name}: bus bandwidth above the model",
                               ev + "; in-network reduction (NVLink or InfiniBand SHARP) "
                                    "moves fewer bytes than the model's rings and trees, or "
                                    "the fabric beats its catalog constants"))
        else:
            out.append(finding("ok", f"{name}: bus bandwidth as expected", ev))
    elif not np.isfinite(expected).any() and op.split()[0] not in MODELLED:
        out.append(finding("warn", f"{name}: no expectation",
                           f"the model covers all_reduce, all_gather, reduce_scatter, alltoall "
                           f"and sendrecv, not {op}"))
    mid = ((size_bytes >= COLLAPSE_FROM_BYTES) & (size_bytes < size_bytes.max())
           & np.isfinite(expected) & (expected > 0))
    short = mid & (busbw < MIDSIZE_ALERT_SHARE * np.where(mid, expected, 0))
    if short.any():
        i = int(np.argmin(np.where(short, busbw / np.where(mid, expected, 1), np.inf)))
        out.append(finding("alert", f"{name}: far below expectation at mid sizes",
                           f"{int(short.sum())} size(s) from {_size(COLLAPSE_FROM_BYTES)} "
                           f"under {MIDSIZE_ALERT_SHARE:g} x the expectation; worst "
                           f"{_gb(busbw[i])} at {_size(size_bytes[i])} = "
                           f"{busbw[i] / expected[i]:.3f} x the expected {_gb(expected[i])}"))
    order = np.argsort(size_bytes, kind="stable")
    s, b = size_bytes[order], busbw[order]
    best, dip = -np.inf, None
    for j in range(len(s)):
        if s[j] >= COLLAPSE_FROM_BYTES and best > 0 and b[j] < COLLAPSE_SHARE * best:
            out.append(finding("alert", f"{name}: bandwidth collapse at {_size(s[j])}",
                               f"busbw {_gb(b[j])} at {_size(s[j])} after {_gb(best)} at a "
                               f"smaller size ({b[j] / best:.2f} x)"))
            dip = None
            break
        if (dip is None and s[j] >= COLLAPSE_FROM_BYTES and best > 0
                and b[j] < DIP_SHARE * best):
            dip = (s[j], b[j], best)
        if s[j] >= COLLAPSE_FROM_BYTES:
            best = max(best, b[j])
    if dip is not None:
        out.append(finding("warn", f"{name}: bandwidth dip at {_size(dip[0])}",
                           f"busbw {_gb(dip[1])} at {_size(dip[0])} after {_gb(dip[2])} at a "
                           f"smaller size ({dip[1] / dip[2]:.2f} x; a dip below "
                           f"{DIP_SHARE:g} x is more than run-to-run noise)"))
    return out


@dataclass(frozen=True)
class PredictedMfu:
    """The step model's MFU for the run a log shows, and its band (checked once here).

    Attributes
    ----------
    mfu : float
        Predicted MFU [-].
    band : (float, float), optional
        The step model's own band around it on published runs of this kind [-].
    band_reason : str, optional
        What the band rests on, as the finding states it.
    """

    mfu: float
    band: tuple | None = None
    band_reason: str | None = None

    def __post_init__(self) -> None:
        if self.band is not None:
            if len(self.band) != 2:
                raise v.InputError("band", f"band must be (low, high), got {self.band!r}")
            object.__setattr__(self, "band", tuple(self.band))


def step_findings(log, median_step_s, mfu=None, predicted: PredictedMfu | None = None,
                  model_tflops_per_gpu=None, log_tflops_per_gpu=None) -> list:
    """Findings for a training log (its ``step``, ``step_time_s`` and ``time_s`` series):
    MFU against prediction, tail, restarts and gaps."""
    step, st, t = (np.asarray(log.step, float), np.asarray(log.step_time_s, float),
                   np.asarray(log.time_s, float))
    out = []
    if model_tflops_per_gpu and log_tflops_per_gpu:
        r = model_tflops_per_gpu / log_tflops_per_gpu
        if not 1 / LOG_FLOPS_RATIO <= r <= LOG_FLOPS_RATIO:
            out.append(finding("warn", "the scenario does not match the log",
                               f"{model_tflops_per_gpu:,.1f} model TFLOP/s per GPU from the "
                               f"scenario = {r:.2f} x the log's own {log_tflops_per_gpu:,.1f}: "
                               "check the sequence length, GPU count and model"))
    if mfu is not None and mfu > 1:
        # no MFU above 1 is shown: the figure describes the scenario, not the run
        out.append(finding("alert", "the scenario gives more model FLOPs than the peak",
                           "the scenario's model FLOPs per token x the measured tokens/s "
                           "exceed the GPUs' dense peak: the sequence length, GPU count or "
                           "model is not the run's; no MFU is reported"))
    elif mfu is not None and predicted is not None:
        predicted_mfu, mfu_band = predicted.mfu, predicted.band
        share = mfu / predicted_mfu
        ev = f"MFU {mfu:.3f} = {share:.2f} x the predicted {predicted_mfu:.3f}"
        if share < MFU_ALERT_SHARE:
            out.append(finding("alert", "MFU far below the prediction", ev))
        elif mfu_band and mfu < mfu_band[0]:
            # the band is the step model's own error on published runs of this kind
            out.append(finding("warn", "MFU below the prediction band",
                               f"{ev}; band {mfu_band[0]:.3f}-{mfu_band[1]:.3f} "
                               f"({predicted.band_reason})"))
        else:
            out.append(finding("ok", "MFU within reach of the prediction", ev))
    good = st[np.isfinite(st)]
    if len(good) >= 3:
        tail = np.percentile(good, 95) / np.median(good)
        ev = (f"p95 step {np.percentile(good, 95):.3f} s = {tail:.2f} x the median "
              f"{np.median(good):.3f} s over {len(good)} logged steps")
        out.append(finding("warn" if tail > TAIL_WARN_RATIO else "ok",
                           "step-time tail (stragglers)" if tail > TAIL_WARN_RATIO
                           else "step times steady", ev))
    back = np.nonzero(np.diff(step) <= 0)[0]
    for i in back[:5]:
        out.append(finding("alert", "restart",
                           f"step {int(step[i + 1])} logged after step {int(step[i])}: "
                           f"{int(step[i] - step[i + 1]) + 1} steps done again"))
    if median_step_s and np.isfinite(t).sum() >= 2:
        dt, ds = np.diff(t), np.diff(step)
        expect = np.where(ds > 0, ds, 1) * median_step_s
        gap = np.nonzero(np.isfinite(dt) & (dt > GAP_RATIO * expect) & (dt > GAP_MIN_S))[0]
        lost = float(np.sum(dt[gap] - expect[gap])) if len(gap) else 0.0
        if len(gap):
            i = gap[0]
            out.append(finding("warn", "gaps in the log (lost time)",
                               f"{len(gap)} gap(s), {lost:,.0f} s beyond the step time; the "
                               f"first {dt[i]:,.0f} s between steps {int(step[i])} and "
                               f"{int(step[i + 1])}"))
    return out


def dcgm_findings(summary: dict) -> list:
    """Findings for DCGM samples (dcgm-exporter or dcgmi dmon): blank fields, profiling gauges stuck at 0, and
    the profiling means as read."""
    out = []
    blank = {k: x["blank"] for k, x in summary.items() if x["blank"]}
    if blank:
        out.append(finding("warn", "DCGM fields not available",
                           ", ".join(f"{k} ({n})" for k, n in blank.items()) + ": DCGM blank "
                           "values (not found, not supported or not permitted), not readings"))
    prof = {k: x for k, x in summary.items() if k.startswith("DCGM_FI_PROF_") and x["max"] is not None}
    if prof and all(x["max"] == 0 for x in prof.values()):
        gpus = max(x["gpus"] for x in prof.values())
        out.append(finding("warn", "profiling gauges read 0",
                           f"{', '.join(prof)} are 0 on all {gpus} GPU(s)/instances: idle, or "
                           "the profiling module not collecting (NVIDIA/dcgm-exporter#662: "
                           "GR_ENGINE_ACTIVE silently 0 under load)"))
    elif prof:
        out.append(finding("ok", "profiling gauges read",
                           ", ".join(f"{k.removeprefix('DCGM_FI_PROF_')} mean {x['mean']:.2f}"
                                     for k, x in prof.items())))
    return out


def checkpoint_findings(checkpoint_s, median_step_s=None) -> list:
    """What the log says of its checkpoint saves: count, p50 and p99 of the blocking time.
    The cluster guide ("Monitoring: What to Watch") says to watch the p99 of
    checkpoint writes, not the p50: both are shown, with the p99 in steps."""
    c = np.asarray(checkpoint_s, float)
    if not len(c):
        return []
    p50, p99 = np.percentile(c, 50), np.percentile(c, 99)
    steps = f" ({p99 / median_step_s:.2f} steps)" if median_step_s else ""
    return [finding("ok", "checkpoint saves",
                    f"{len(c)} save(s) blocking training p50 {p50:.2f} s, p99 {p99:.2f} s"
                    f"{steps}; with async saving this is the staging, the write goes on "
                    "behind training")]


def data_loading_share(data_loading_s, step_time_s):
    """Median share of a step spent waiting for data: Megatron's batch-generator timer over
    the elapsed time per iteration, over the logged intervals that have both (None: none)."""
    d, t = np.asarray(data_loading_s, float), np.asarray(step_time_s, float)
    if not len(d) or len(d) != len(t):
        return None
    ok = np.isfinite(d) & np.isfinite(t) & (t > 0)
    return float(np.median(d[ok] / t[ok])) if ok.any() else None


def data_loading_findings(data_loading_s, step_time_s) -> list:
    """Data loading against the cluster guide's 10% of the step."""
    share = data_loading_share(data_loading_s, step_time_s)
    if share is None:
        return []
    d, t = np.asarray(data_loading_s, float), np.asarray(step_time_s, float)
    ok = np.isfinite(d) & np.isfinite(t) & (t > 0)
    ev = (f"median {share:.1%} of the step waiting for data (batch-generator "
          f"{np.median(d[ok]) * 1e3:,.1f} ms of {np.median(t[ok]) * 1e3:,.1f} ms, "
          f"{int(ok.sum())} interval(s)); the cluster guide wants under "
          f"{DATA_WARN_SHARE:.0%}")
    if share > DATA_ALERT_SHARE:
        return [finding("alert", "the step waits for its data longer than it computes", ev)]
    if share > DATA_WARN_SHARE:
        return [finding("warn", "data loading above 10% of the step", ev)]
    return [finding("ok", "data loading", ev)]


def regime_findings(name: str, size_bytes, share, regime) -> list:
    """A warning per size regime where a size's measured bus bandwidth is below
    :data:`REGIME_WARN_SHARE` of its expectation (the worst size named, the threshold and
    what it was set on stated); nothing where every size is above it."""
    size_bytes, share = np.asarray(size_bytes, float), np.asarray(share, float)
    regime = np.asarray(regime, dtype=object)
    out = []
    for reg, thr in REGIME_WARN_SHARE.items():
        low = (regime == reg) & np.isfinite(share) & (share < thr)
        if not low.any():
            continue
        i = int(np.argmin(np.where(low, share, np.inf)))
        out.append(finding("warn", f"{name}: below expectation at {reg} sizes",
                           f"{int(low.sum())} size(s) under {thr:.2f} x the expectation "
                           f"({REGIME_SOURCE}); worst {share[i]:.2f} x at "
                           f"{_size(size_bytes[i])}"))
    return out

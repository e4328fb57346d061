"""Labels and formats of the headline figures and readable numbers ($4.1 M, 2 T, 43.0%).
Everything shown reads a Results object: nothing is computed here."""

from __future__ import annotations

import math

import numpy as np

from ..economics import realized
from .results import OPTION_LABELS, Results

#: scale suffixes of counts (tokens, parameters, FLOPs): short scale, as model cards write them
_COUNT_UNITS = ((1e15, "P"), (1e12, "T"), (1e9, "B"), (1e6, "M"))
#: scale suffixes of dollar figures
_USD_UNITS = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))


def _finite(x) -> bool:
    try:
        return x is not None and not isinstance(x, bool) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, without trailing zeros (4.10 -> "4.1")."""
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scaled(x: float, units, digits: int):
    """(mantissa text, suffix) of ``x`` in the largest unit it reaches; rounding that reaches
    the next unit moves to it (999,950 -> "1 M", not "1,000 k")."""
    for i, (size, suffix) in enumerate(units):
        if abs(x) >= size * (1 - 0.5 * 10 ** -digits):
            text = _sig(x / size, digits)
            if i > 0 and abs(float(text.replace(",", ""))) >= 1000:
                size, suffix = units[i - 1]
                text = _sig(x / size, digits)
            return text, suffix
    return None, None


def human_count(x, digits: int = 3) -> str:
    """A count as people say it: exact with thousands separators below a million
    ("8,192"), then ``digits`` significant digits and a short-scale suffix ("405 B", "2 T",
    "14.8 T"). "n/a" for None, NaN and inf."""
    if not _finite(x):
        return "n/a"
    x = float(x)
    if abs(x) < 1e6:
        return f"{x:,.0f}" if x == round(x) or abs(x) >= 100 else _sig(x, digits)
    text, suffix = _scaled(x, _COUNT_UNITS, digits)
    return f"{text} {suffix}"


def usd_text(x, digits: int = 3) -> str:
    """Dollars: cents below $1,000 ("$12.40"), then ``digits`` significant digits and a
    suffix ("$950 k", "$4.1 M", "$1.2 B"); negative amounts as "-$4.1 M"."""
    if not _finite(x):
        return "n/a"
    x = float(x)
    sign, x = ("-" if x < 0 else ""), abs(x)
    text, suffix = _scaled(x, _USD_UNITS, digits)
    if suffix is not None:
        return f"{sign}${text} {suffix}"
    return f"{sign}${x:,.2f}"


def price_text(usd_per_gpu_hour, offer=None) -> str:
    """A way to pay's price and the offer it comes from: "$2.97/GPU-h (aws-p5)"; empty when
    the option has no price per GPU-hour (on-premises)."""
    if usd_per_gpu_hour is None:
        return ""
    return f"${usd_per_gpu_hour:,.2f}/GPU-h" + (f" ({offer})" if offer else "")


def pct_text(x, digits: int = 1) -> str:
    """A fraction as a percentage: 0.43 -> "43.0%"."""
    if not _finite(x):
        return "n/a"
    return f"{float(x) * 100:,.{digits}f}%"


def days_text(x) -> str:
    """A duration in days: hours below a day ("5.2 h"), "26.2 days", and years beside long
    ones ("1,826 days (5.0 years)")."""
    if not _finite(x):
        return "n/a"
    x = float(x)
    if abs(x) < 1:
        return f"{x * 24:,.1f} h"
    if abs(x) < 1000:
        return f"{x:,.1f} days"
    return f"{x:,.0f} days ({x / 365.25:,.1f} years)"


def minutes_text(seconds) -> str:
    """A duration given in seconds, in minutes ("69.4 min"), seconds below a minute."""
    if not _finite(seconds):
        return "n/a"
    s = float(seconds)
    return f"{s:,.1f} s" if abs(s) < 60 else f"{s / 60:,.1f} min"


def measured_run_text(run) -> str:
    """A measured run in a few words: "llama3-70b, 4.19 B tokens on 512 GPUs in 2.8 h"
    (:class:`llmcost.review.series.MeasuredRun`)."""
    sec = float(run.wall_clock_s)
    took = minutes_text(sec) if sec < 3600 else days_text(sec / 86400)
    return (f"{run.model}, {human_count(run.tokens)} tokens on {human_count(run.gpus)} GPUs "
            f"in {took}")


HEADLINE_LABELS = {
    "days": ("Days to train (forecast)", "{:,.1f}"),
    "cost_on_demand_usd": ("Cost on demand", usd_text),
    "gpus": ("GPUs", "{:,}"),
    "mfu": ("MFU", pct_text),
    "mfu_precision": ("MFU of the precision's peak", pct_text),
    "hfu_precision": ("HFU of the precision's peak", pct_text),
    "effective_utilization": ("Effective utilization (floor)", pct_text),
    "memory_gb_per_gpu": ("Memory per GPU, used of capacity", "{:,.1f}"),
    "capacity_gb": ("GPU memory (GB)", "{:,.1f}"),
    "fits": ("Fits in memory", "{}"),
    "best_layout": ("Best layout", "{}"),
    "goodput": ("Goodput", pct_text),
    "meets_target": ("Meets target days", "{}"),
    "cheapest_option": ("Cheapest for this run", "{}"),
    "breakeven_months": ("Buying beats on-demand after", "{:,.1f} months"),
    "spot_net_savings": ("Spot net savings", pct_text),
    "job_mtbf_h": ("Job MTBF", "{:,.1f} h"),
    "gpu_hours": ("GPU-hours of the run (forecast)", lambda x: f"{human_count(x)}"),
    "realized_ratio": ("Forecast over the floor", "x{:.2f}"),
    "global_batch_tokens": ("Global batch", lambda x: f"{human_count(x)} tokens"),
}



def _by_unit(key: str):
    """The format of a figure not in HEADLINE_LABELS, from the unit in its name."""
    if key.endswith("_usd") or key.startswith("cost"):
        return usd_text
    if key == "tokens" or key.endswith("_tokens"):
        return lambda x: f"{human_count(x)} tokens"
    if key.endswith(("_share", "_savings", "utilization")) or key in ("mfu", "hfu", "goodput"):
        return pct_text
    if key == "days" or key.endswith("_days"):
        return days_text
    return "{}"


def format_headline(key: str, value) -> str:
    """The text of one headline figure: dollars as "$4.1 M", shares as "43.0%", counts with
    separators ("1,024"), tokens as "2 T tokens"; "n/a" when not available."""
    label, fmt = HEADLINE_LABELS.get(key, (key, _by_unit(key)))
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if value is None or (isinstance(value, (float, np.floating)) and not math.isfinite(value)):
        return "n/a"
    if key == "cheapest_option":
        return OPTION_LABELS.get(value, str(value))
    return fmt(value) if callable(fmt) else fmt.format(value)


def forecast_suffix(results: Results, key: str) -> str:
    """" (band lo-hi; floor x)" for the ``days`` or ``gpu_hours`` headline: the forecast's
    band over comparable published runs and the cluster's best case, from ``results.forecast``."""
    f = results.forecast
    n = f.realized.runs
    if key == "days":
        lo, hi = f.days_band
        return f" ({band_text(f'{lo:,.1f}', f'{hi:,.1f}', n)}; floor {f.floor_days:,.1f})"
    lo, hi = f.gpu_hours_band
    return (f" ({band_text(human_count(lo), human_count(hi), n)}; floor "
            f"{human_count(f.floor_gpu_hours)})")


def band_text(low: str, high: str, runs: int) -> str:
    """The forecast's band in the words every view gives it: "80% band 50.7-131.3 from 5
    published runs" (``runs``: the comparable runs it comes from)."""
    cover = realized.BAND_PERCENTILES[1] - realized.BAND_PERCENTILES[0]
    return f"{cover:.0f}% band {low}-{high} from {runs} published run{'s' if runs != 1 else ''}"


def memory_text(used_gb: float, capacity_gb: float) -> str:
    """Memory per GPU, used of capacity, in GB (1e9 bytes) and GiB (2**30 bytes):
    "50.5 of 85.9 GB (47.0 of 80.0 GiB)"."""
    g = 1e9 / 2 ** 30
    return (f"{used_gb:,.1f} of {capacity_gb:,.1f} GB ({used_gb * g:,.1f} of "
            f"{capacity_gb * g:,.1f} GiB)")


def realized_text(rr) -> str:
    """The realized ratio, its band and the group it comes from, in words: "x1.07 over the
    floor (80% band x0.94-x1.71): 15 published runs, any stack, dense"."""
    cover = realized.BAND_PERCENTILES[1] - realized.BAND_PERCENTILES[0]
    text = (f"x{rr.value:.2f} over the floor ({cover:.0f}% band x{rr.band[0]:.2f}-"
            f"x{rr.band[1]:.2f}): "
            f"{rr.runs} published run{'s' if rr.runs != 1 else ''}, {rr.group_label}")
    return text + (f" ({rr.fallback})" if rr.fallback else "")


def headline_items(results: Results, keys) -> dict:
    """key -> (label, text, flag or None) for the keys present."""
    h = results.headline
    out = {}
    for k in keys:
        if k not in h:
            continue
        text = format_headline(k, h[k])
        e = results.economics
        f = results.forecast
        if k in ("days", "gpu_hours") and f is not None and f.days_band is not None and \
                _finite(h[k]):
            # the forecast's band (comparable published runs' spread), the floor beside it
            text += forecast_suffix(results, k)
        if k == "gpu_hours" and e is not None and _finite(h[k]) and _finite(e.napkin_gpu_hours):
            # the napkin beside the answer (economics.napkin; the factors are in the notes)
            text = text[:-1] + f"; napkin {human_count(e.napkin_gpu_hours)})" \
                if text.endswith(")") else text + f" (napkin {human_count(e.napkin_gpu_hours)})"
        if k == "gpus" and results.size is not None and results.size.floor_gpus and \
                results.size.floor_gpus != h[k]:
            # sized for the forecast to meet the target; the cluster's best case needs fewer
            text += f" (the floor needs {results.size.floor_gpus:,})"
        if k == "memory_gb_per_gpu" and _finite(h[k]) and _finite(h.get("capacity_gb")):
            text = memory_text(h[k], h["capacity_gb"])
        if k == "fits" and _finite(h.get("memory_gb_per_gpu")) and _finite(h.get("capacity_gb")):
            # decided against the capacity the memory box shows
            text += (f" (within {h['capacity_gb']:,.1f} GB)" if h[k] else
                     f" (needs {h['memory_gb_per_gpu']:,.1f} of {h['capacity_gb']:,.1f} GB)")
        if k == "realized_ratio" and f is not None:
            text = realized_text(f.realized)
        if k == "global_batch_tokens" and results.inputs.batch is not None and _finite(h[k]):
            text += (" (raised to fill the GPUs)" if results.plan.batch_source == "fill"
                     else " (batch rule)")
        if k == "mfu" and results.scenario.precision in ("fp8", "mxfp8") and \
                _finite(h[k]) and _finite(h.get("mfu_precision")):
            # published runs state MFU on the dense BF16 peak; an FP8 run's GEMMs run at twice
            # it, so the figure can pass 100%: the share of the FP8 peak is the physical bound
            prec = results.scenario.precision.upper()
            text = f"{text} of the dense BF16 peak; {pct_text(h['mfu_precision'])} of the dense {prec} peak"
        if k == "breakeven_months" and h[k] is None and e is not None and \
                results.inputs.onprem is not None and results.inputs.prices is not None:
            text = "never"          # both options are costed and buying never catches up
        out[k] = (HEADLINE_LABELS.get(k, (k,))[0], text, results.flags.get(k))
    return out


#: words that put a review note under a subject (the first subject that matches wins);
#: a note matching none is about training (layout, batch, fabric, MFU, the napkin)
NOTE_SUBJECTS = {
    "prices": ("spot", "price", "offer", "purchase", "reserved", "reservation",
               "on-premises", "cost", "$"),
    "reliability": ("failure", "checkpoint", "mtbf", "restart", "goodput", "preempt",
                    "storage", "data stall", "data-loading"),
}


#: how the training notes that name costs or checkpoints in passing begin
TRAINING_NOTE_LEADS = ("gpu-hours", "global batch", "what limits mfu", "fabric ",
                       "pipeline bubble", "the layout")


def note_subject(text: str) -> str:
    """"prices", "reliability" or "training": what a review note is about, so each page
    shows the notes of its own subject."""
    t = text.lower()
    if t.startswith(TRAINING_NOTE_LEADS):
        return "training"
    for subject, words in NOTE_SUBJECTS.items():
        if any(w in t for w in words):
            return subject
    return "training"

"""``llmcost review``: the whole review of a scenario, and its text view."""

from __future__ import annotations

import argparse

from .scenarios import _compared, _scenarios_from_args


def cmd_review(a) -> dict:
    """The review chain on a Scenario from a query string and/or a scenario file (the file
    first, then the query on top); infeasible scenarios are answered, bad values refused.
    A link that compares scenarios (``b.``/``c.`` keys, as the apps share) reviews each."""
    from ..review import evaluate
    scenarios, cat, notes = _scenarios_from_args(a)
    out = [evaluate(s, cat).to_json() for s in scenarios]
    if len(out) == 1:
        out[0]["warnings"] = notes + out[0]["warnings"]
        return out[0]
    return _compared(out, notes)


def _forecast_lines(r: dict) -> list:
    """The forecast's GPU-hours, band, floor, napkin and the group it compares with."""
    from ..review.format import band_text, human_count
    if r.get("gpu_hours") is None:
        return []
    rr = r["realized_ratio"]
    lo, hi = r["gpu_hours_band"] or (r["gpu_hours"], r["gpu_hours"])
    return [f"  GPU-hours         {human_count(r['gpu_hours'])}  "
            f"({band_text(human_count(lo), human_count(hi), rr['runs'])}; floor "
            f"{human_count(r['gpu_hours_floor'])}; napkin "
            f"{human_count(r['napkin_gpu_hours'])})",
            f"  realized ratio    x{rr['value']:.2f} (band x{rr['band'][0]:.2f}-x{rr['band'][1]:.2f})"
            f" over the floor: {rr['group']}, {rr['runs']} published runs"
            + (f" ({rr['fallback']})" if rr.get("fallback") else "")]


def _price_text(r: dict, option: str) -> str:
    """The price per GPU-hour an option is costed at and the offer it comes from: options are
    priced from different providers' offers (``price_rule``), so a 3-year term can cost more
    per hour than another provider's on-demand."""
    from ..review.format import price_text
    text = price_text((r.get("prices_usd_per_gpu_hour") or {}).get(option),
                      (r.get("price_offers") or {}).get(option))
    return f"  at {text}" if text else ""


def _review_text(r: dict) -> str:
    def num(x, fmt):
        return "n/a" if x is None else fmt.format(x)

    from ..review.format import band_text, human_count, memory_text
    lay = r["layout"]
    size = human_count(r["params"])
    if r["active_params"] != r["params"]:
        size += f", {human_count(r['active_params'])} active"
    band = ""
    if r.get("days_band"):
        lo, hi = (f"{x:,.1f}" for x in r["days_band"])
        band = (f"  ({band_text(lo, hi, r['realized_ratio']['runs'])}; floor "
                f"{r['days_floor']:,.1f})")
    lines = [f"{r['model']} ({size} parameters) on {r['gpus']:,} x {r['gpu']} ({r['fabric']})",
             f"  days              {num(r['days'], '{:,.1f}')}" + band
             + (f"   (target met: {'yes' if r['meets_target'] else 'no'})" if "meets_target" in r else ""),
             *_forecast_lines(r),
             f"  layout            {lay['description'] if lay else 'none'}",
             f"  fits in memory    {'yes' if r['fits'] else 'NO'}  "
             + (f"({memory_text(r['memory_gb_per_gpu'], r['capacity_gb'])} per GPU)"
                if r['memory_gb_per_gpu'] is not None else "(no layout)"),
             f"  MFU               {num(r['mfu'], '{:.1%}')}"
             + (f" of the dense BF16 peak; {num(r.get('mfu_precision'), '{:.1%}')} of the dense "
                f"{r['precision'].upper()} peak" if r.get("precision") in ("fp8", "mxfp8") else ""),
             f"  effective util.   {num(r['effective_utilization'], '{:.1%}')}",
             f"  job MTBF          {num(r['job_mtbf_h'], '{:,.1f} h')}  "
             f"({r['failures_per_1000_gpu_days']:.3g} failures per 1000 GPU-days, {r['failure_source']})",
             f"  checkpoint every  {num(r['checkpoint_interval_s'], '{:,.0f} s')}   goodput "
             f"{num(r['goodput'], '{:.1%}')}",
             f"  spot net savings  {num(r['spot_net_savings'], '{:.1%}')}",
             f"  breakeven         {num(r['breakeven_months'], '{:,.1f} months')} (buying vs on-demand)",
             "  cash cost of this run (commitments included), at the price and offer of each way to pay:"]
    for k, x in r["costs_usd"].items():
        extra = r["commitments"].get(k, "")
        lines.append(f"    {k:<12} ${x:>18,.0f}  amortized ${r['costs_amortized_usd'].get(k, x):>16,.0f}"
                     + _price_text(r, k) + (f"  [{extra}]" if extra else ""))
    if not r["costs_usd"]:
        lines.append("    none (no run: no layout)" if r.get("days") is None
                     else "    none (no price for this GPU)")
    for name, f in r["flags"].items():
        lines.append(f"  FLAG {name}: {f['level']}: {f['message']}")
    if r["warnings"]:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in r["warnings"]]
    return "\n".join(lines)


def _args_review(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost review``."""
    sp.add_argument("--query", help='the apps\' query string, e.g. "model=llama3-405b&gpus=16384"')
    sp.add_argument("--scenario", help="a scenario file saved by an app (JSON)")
    sp.add_argument("--model-config", metavar="FILE",
                    help="a Hugging Face config.json: review that model (model=config)")

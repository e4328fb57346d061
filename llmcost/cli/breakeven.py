"""``llmcost breakeven``: months after which buying a node beats renting it."""

from __future__ import annotations

import argparse
import math

from .. import _validate as v
from ..economics import tco


def cmd_breakeven(a) -> dict:
    # checked under the command's own names: the library's are per GPU (units cancel)
    v.positive("cloud_usd_per_node_hour", a.cloud_usd_per_node_hour)
    v.positive("onprem_capex_usd_per_node", a.onprem_capex_usd_per_node)
    v.nonnegative("onprem_opex_usd_per_node_month", a.onprem_opex_usd_per_node_month)
    m = float(tco.breakeven_months(a.cloud_usd_per_node_hour, a.onprem_capex_usd_per_node,
                                   a.utilization, a.onprem_opex_usd_per_node_month))
    cloud_month = tco.HOURS_PER_MONTH * a.cloud_usd_per_node_hour * a.utilization
    res = {"breakeven_months": m if math.isfinite(m) else None,
           "breaks_even": math.isfinite(m),
           "cloud_usd_per_node_month": cloud_month,
           "onprem_opex_usd_per_node_month": a.onprem_opex_usd_per_node_month}
    if a.horizon_months is not None:
        h = float(v.positive("horizon_months", a.horizon_months))
        cloud = cloud_month * h
        prem = a.onprem_capex_usd_per_node + a.onprem_opex_usd_per_node_month * h
        res.update({"horizon_months": h, "cloud_usd_per_node": cloud, "onprem_usd_per_node": prem,
                    "cheaper": "buy (on-premises)" if prem < cloud else "rent (cloud)"})
    if not math.isfinite(m):
        res["note"] = "the cloud bill per month never exceeds on-premises opex: renting stays cheaper"
    return res


def _args_breakeven(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost breakeven``."""
    sp.add_argument("--cloud-usd-per-node-hour", type=float, required=True)
    sp.add_argument("--onprem-capex-usd-per-node", type=float, required=True)
    sp.add_argument("--utilization", type=float, required=True, help="share of hours used (0-1]")
    sp.add_argument("--onprem-opex-usd-per-node-month", type=float, default=0.0)
    sp.add_argument("--horizon-months", type=float, help="also compare total cost over a horizon")

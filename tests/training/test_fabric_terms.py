"""Every figure of data/fabrics.csv is a measurement or an assumption, and the review bands
the assumptions.

Issue "Which GPU, which cloud", item 3: each congestion or efficiency term cites a
measurement or is marked an assumption with a band the review shows; RoCE and InfiniBand
ordered as measurements order them.
"""

import csv
import json
import re
from pathlib import Path

import pytest

from llmcost.catalog import BANDED_TERMS, FABRIC_TERMS
from llmcost.cli import main
from llmcost.review import evaluate
from llmcost.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
ROWS = list(csv.DictReader(open(ROOT / "data" / "fabrics.csv", newline="")))
LLAMA = "model=llama3-405b&gpus=16384&gpu=h100-sxm&tokens=15.6e12"


def _terms(cell: str) -> set:
    return {t.strip() for t in (cell or "").split(";") if t.strip()}


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_figure_is_measured_or_assumed_never_both(row):
    measured, assumed = _terms(row["measured"]), _terms(row["assumed"])
    given = {t for t in FABRIC_TERMS if row[t].strip()}
    assert not measured & assumed, measured & assumed
    assert measured | assumed == given, (given - (measured | assumed), (measured | assumed) - given)


@pytest.mark.parametrize("row", [r for r in ROWS if r["kind"] == "scale_out"],
                         ids=[r["id"] for r in ROWS if r["kind"] == "scale_out"])
def test_an_assumed_efficiency_or_congestion_says_so_in_its_notes(row):
    # the notes say why each assumed term has its value ("assumption", "as ib-ndr", ...)
    for t in _terms(row["assumed"]) & {"efficiency", "congestion_per_doubling"}:
        said = re.search(rf"{t}[^;]*?(assum|as ib-ndr|as aws-efa|unconfirmed)", row["notes"])
        assert said, (row["id"], t)


def _favourable(a: dict, b: dict) -> set:
    """The timing terms in which fabric row ``a`` is faster than row ``b``."""
    out = set()
    for t, better in (("latency_us", -1), ("efficiency", 1), ("congestion_per_doubling", -1),
                      ("oversubscription", -1)):
        x, y = float(a[t] or 0), float(b[t] or 0)
        if (x - y) * better > 0:
            out.add(t)
    return out


def test_tuned_roce_is_faster_than_infiniband_only_by_a_measured_term(capsys):
    rows = {r["id"]: r for r in ROWS}
    roce, ib = rows["roce-400-tuned"], rows["ib-ndr"]
    assert roce["link_gbit_per_s"] == ib["link_gbit_per_s"]
    days = {}
    for fid in ("roce-400-tuned", "ib-ndr"):
        assert main(["review", "--query", f"{LLAMA}&fabric={fid}", "--json"]) == 0
        days[fid] = json.loads(capsys.readouterr().out)["days_floor"]
    if days["roce-400-tuned"] < days["ib-ndr"]:
        # every term that makes it faster is a measurement the row cites
        ahead = _favourable(roce, ib)
        assert ahead and ahead <= _terms(roce["measured"]), ahead
        assert "Table 4" in roce["source"] and "41%" in roce["notes"]
    # and the assumed terms never put it ahead
    assert not _favourable(roce, ib) & _terms(roce["assumed"])


def test_the_review_bands_the_assumed_terms_and_the_note_states_the_same_figures():
    s, _ = Scenario.from_query(f"{LLAMA}&fabric=aws-efa-p5")
    res = evaluate(s)
    j = res.to_json()
    fa = j["fabric_assumptions"]
    assert fa["fabric"] == "aws-efa-p5"
    assert set(fa["assumed"]) == {"oversubscription", "efficiency", "congestion_per_doubling"}
    lo, hi = fa["step_time_s_band"]
    assert lo <= fa["step_time_s"] <= hi and lo < hi
    # the floor's days scale with the step time
    d_lo, d_hi = fa["days_floor_band"]
    assert d_lo == pytest.approx(j["days_floor"] * lo / fa["step_time_s"])
    assert d_hi == pytest.approx(j["days_floor"] * hi / fa["step_time_s"])
    note = next(w for w in j["warnings"] if w.startswith("fabric aws-efa-p5:"))
    assert f"{lo:.3g}-{hi:.3g} s" in note
    # the forecast's days scale alike, and the note states the JSON's figures
    assert fa["days_band"] == pytest.approx([j["days"] * lo / fa["step_time_s"],
                                            j["days"] * hi / fa["step_time_s"]])
    assert f"{fa['days_band'][0]:,.1f}-{fa['days_band'][1]:,.1f} days" in note


def test_the_band_spans_the_measured_values():
    """EFA measures no congestion: its assumed 0.26 spans 0 (non-blocking) to the largest
    congestion measured on an RDMA fabric (roce-400, 0.75); its efficiency spans EFA's own
    measured 0.84 (p4d) to its assumed 0.9."""
    from llmcost import catalog
    cat = catalog.default()
    good, bad = cat.fabric_bounds(cat.fabric("aws-efa-p5"))
    assert good.congestion_per_doubling == 0 and bad.congestion_per_doubling == 0.75
    assert good.efficiency == 0.9 and bad.efficiency == 0.84
    assert set(BANDED_TERMS) >= {"efficiency", "congestion_per_doubling"}
    # roce-400's efficiency and congestion are fitted: only its latency (assumed 4 us) moves
    good, bad = cat.fabric_bounds(cat.fabric("roce-400"))
    assert (good.efficiency, bad.efficiency) == (0.67, 0.67)
    assert (good.congestion_per_doubling, bad.congestion_per_doubling) == (0.75, 0.75)
    # latency spans the latencies measured on the catalog's technology-roce rows (GCP's
    # TCPX rows, 8 and 22 us) with its own 4 us inside
    assert (good.latency_us, bad.latency_us) == (4.0, 22.0)


def test_a_custom_fabric_and_a_pcie_gpu_are_banded_too():
    """The property test's find: a custom fabric (the technology row's assumed terms) on an
    L40S, whose scale-up is PCIe, slower than the fabric given."""
    s, _ = Scenario.from_query("model=llama3-70b&gpu=l40s&gpus=1024&tokens=1e12&fabric=custom"
                               "&fabric_gb_per_s_per_gpu=353.302&fabric_technology=ib")
    fa = evaluate(s).to_json()["fabric_assumptions"]
    assert fa["fabric"] == "custom" and fa["step_time_s_band"][0] <= fa["step_time_s"]

"""The "Storage and checkpoints" app (checkpoints.ipynb) without a browser: every figure it
shows is the review's / storage_summary's of the same Scenario, the goodput plot's curves
are the storage model's, and the seed's claims are worked from the storage functions."""

import base64
import html
import math
import re

import numpy as np
import pytest

from llmcost import catalog, review
from llmcost.apps.checkpoints_app import CheckpointApp
from llmcost.apps.plotview import shown_figure
from llmcost.apps.registry import titles
from llmcost.economics import reliability as rel
from llmcost.economics import storage
from llmcost.review.storage_view import storage_summary
from llmcost.scenario import Scenario

# a 20 GB/s shared tier (given as its total; the default scales with the nodes) makes the
# upload outlast Daly's interval, which the tests below need
Q405 = "model=llama3-405b&gpu=h100-sxm&gpus=16384&checkpoint_mode=async&shared_storage_gb_per_s=20"
S405 = dict(model="llama3-405b", gpu="h100-sxm", gpus=16384, checkpoint_mode="async",
            shared_storage_gb_per_s=20.0)


def headline_text(panel, key):
    m = re.search(r"<div class='llmc-headline-value'>(.*?)</div>", panel.headline_html[key])
    return html.unescape(m.group(1))


def plot_json(panel, name):
    fig = shown_figure(panel.outputs[name])
    assert fig is not None, f"plot {name} empty"
    return fig


def arr(x):
    """A plotly JSON array: a list, or plotly 6+'s typed array {dtype, bdata}."""
    if isinstance(x, dict):
        return np.frombuffer(base64.b64decode(x["bdata"]), dtype=np.dtype(x["dtype"]))
    return np.asarray(x, dtype=float)


def first_number(text):
    return float(re.match(r"([\d,]+\.?\d*)", text).group(1).replace(",", ""))


def mode_curves(panel):
    fig = plot_json(panel, "goodput")
    # x is in minutes; each point carries its interval in seconds as customdata
    return {t["legendgroup"][len("mode-"):]: (arr(t["customdata"]), arr(t["y"]))
            for t in fig["data"] if str(t.get("legendgroup", "")).startswith("mode-")}


def test_title_and_url():
    p = CheckpointApp(query="")
    assert p.name == "checkpoints" and titles()["checkpoints"] == "Storage and checkpoints"
    assert p.title == "Storage and checkpoints" and "What storage" in p.intro
    assert p.last_error is None and p.status.value == ""
    assert set(p.outputs) == {"goodput", "tiers", "notice"}
    assert "data_stall_share" in p.controls


@pytest.mark.parametrize("query,kw", [("", {}),
                                      ("checkpoint_mode=async", {"checkpoint_mode": "async"}),
                                      (Q405, S405)])
def test_headline_is_the_review_and_storage_summary_of_the_scenario(query, kw):
    p = CheckpointApp(query=query)
    res = review.evaluate(Scenario(**kw))
    assert p.results is res                      # one cached Results per Scenario
    out = storage_summary(res)
    r = res.reliability
    assert out["goodput"] == pytest.approx(r.goodput, rel=1e-12)
    assert out["interval_s"] == pytest.approx(r.interval_s, rel=1e-12)
    assert headline_text(p, "upload") == f"{out['upload_s']:,.1f} s"
    assert headline_text(p, "interval").startswith(f"{out['interval_s']:,.1f} s")
    assert headline_text(p, "goodput") == f"{out['goodput']:.2%} ({res.scenario.checkpoint_mode})"
    assert headline_text(p, "mtbf").startswith(f"{r.job_mtbf_h:,.1f} h")
    # mixed-precision Adam: 2 (bf16) + 4 (fp32 master) + 4 + 4 (moments) bytes per parameter
    params = catalog.model(res.scenario.model).params
    assert out["checkpoint_gb"] == pytest.approx(14 * params / 1e9, rel=1e-12)
    assert headline_text(p, "size") == f"{14 * params / 1e9:,.0f} GB (14 bytes/param)"
    # data: token ids of a 128,256-entry vocabulary take 4 bytes each
    read_mb = res.predict.tokens_per_s * 4 / 1e6
    assert headline_text(p, "read").startswith(f"{read_mb:,.2f} MB/s total")
    # the dataset tier (20 GB/s) outruns MB/s of token reads: no data stall
    assert res.economics.data_stall_share == 0.0
    assert headline_text(p, "useful") == f"{r.goodput * (1 - res.economics.data_stall_share):.2%}"


def test_405b_async_interval_is_never_shorter_than_the_upload():
    p = CheckpointApp(query=Q405)
    P = catalog.model("llama3-405b").params
    # 2,048 nodes; the 20 GB/s shared tier binds (2,048 x 50 GB/s node links do not)
    upload = 14 * P / 20e9                                       # 284.1 s
    stall = 14 * P / (2048 * min(8 * 25.0, 5.0) * 1e9)            # local NVMe binds: 0.555 s
    M = 3600 * p.results.reliability.job_mtbf_h
    daly = float(rel.daly_interval_s(stall, M))
    assert daly < upload                          # Daly's 111 s would outrun the upload
    shown_interval = first_number(headline_text(p, "interval"))
    shown_upload = first_number(headline_text(p, "upload"))
    assert shown_upload == pytest.approx(upload, abs=0.05)
    assert shown_interval >= shown_upload
    assert p.results.reliability.interval_s == pytest.approx(upload, rel=1e-12)
    assert "raised to the upload" in headline_text(p, "interval")
    assert headline_text(p, "stall").startswith(f"async local: {stall:,.2f} s")


def test_goodput_plot_has_three_mode_curves_and_marks_the_headline():
    p = CheckpointApp(query=Q405)
    curves = mode_curves(p)
    assert set(curves) == {"sync", "async", "peer-memory"}
    out = storage_summary(review.evaluate(Scenario(**S405)))
    x, y = curves["async"]
    i = np.flatnonzero(x == out["interval_s"])
    assert len(i) == 1
    assert y[i[0]] == pytest.approx(out["goodput"], rel=1e-12)
    assert f"{y[i[0]]:.2%} (async)" == headline_text(p, "goodput")
    # the sync curve at sync's own interval is storage_summary's sync goodput too
    xs, ys = curves["sync"]
    j = np.flatnonzero(xs == out["by_mode"]["sync"]["interval_s"])
    assert ys[j[0]] == pytest.approx(out["by_mode"]["sync"]["goodput"], rel=1e-12)
    # async snapshots never come faster than the upload: left of it the curve is flat
    flat = y[x <= out["upload_s"]]
    assert len(flat) > 10 and np.ptp(flat) < 1e-12
    # peer-memory loses less per failure than async (peer copy 0.55 s, not a 284 s upload)
    xp, yp = curves["peer-memory"]
    assert (yp[x >= out["upload_s"]] > y[x >= out["upload_s"]]).all()
    # the chosen marker: the review's interval and goodput
    fig = plot_json(p, "goodput")
    marker = [t for t in fig["data"] if str(t.get("name", "")).startswith("chosen")][0]
    assert arr(marker["customdata"])[0] == out["interval_s"] and arr(marker["y"])[0] == out["goodput"]
    assert arr(marker["x"])[0] == out["interval_s"] / 60
    assert any("assumed: peer copy 0.55 s = the async local stall" in t["name"]
               for t in fig["data"])


def test_goodput_series_keeps_the_sync_curve_and_the_wide_columns():
    res = review.evaluate(Scenario(checkpoint_mode="sync"))     # async is the default
    df = review.goodput_series(res)
    for col in ("interval_s", "mode", "goodput", "sync", "async", "sync_stall_s", "async_stall_s"):
        assert col in df
    sync = df[df["mode"] == "sync"]
    r = res.reliability
    expect = rel.goodput(sync["interval_s"].to_numpy(), r.checkpoint_stall_s,
                         r.job_mtbf_h * 3600, r.restart_h * 3600)   # sync: Daly's model, unchanged
    np.testing.assert_allclose(sync["goodput"], expect, rtol=1e-12)
    np.testing.assert_allclose(sync["sync"], expect, rtol=1e-12)
    assert (df["sync_stall_s"] == r.checkpoint_stall_s).all()


def test_switching_the_mode_changes_the_headline():
    p = CheckpointApp(query="checkpoint_mode=sync")     # async is the default
    before = {k: headline_text(p, k) for k in ("stall", "interval", "goodput", "shared")}
    p.set(checkpoint_mode="async")
    after = {k: headline_text(p, k) for k in before}
    assert all(after[k] != before[k] for k in before)
    res = review.evaluate(Scenario(checkpoint_mode="async"))
    assert after["goodput"] == f"{res.reliability.goodput:.2%} (async)"
    assert after["stall"].startswith("async local:") and before["stall"].startswith("sync:")
    assert mode_curves(p)["async"][1].max() <= 1.0


def test_tiers_table_has_hot_and_warm_needed_vs_offered():
    # llama3-70b, 1,024 GPUs, sync, a 20 GB/s shared tier (the defaults are async and a tier
    # scaling with the nodes)
    p = CheckpointApp(query="checkpoint_mode=sync&shared_storage_gb_per_s=20")
    cells = plot_json(p, "tiers")["data"][0]
    head = cells["header"]["values"]
    cols = dict(zip(head, cells["cells"]["values"]))
    assert cols["tier"] == ["hot", "warm"]
    assert cols["write offered (GB/s)"] == ["5", "20"]
    P = catalog.model("llama3-70b").params
    # sync burst sized for a 10 s stall: 987.75 GB / 10 s = 98.8 GB/s, above the 20 offered
    assert cols["burst write needed (GB/s)"][1] == f"{14 * P / 10 / 1e9:,.3g}" == "98.8"
    assert cols["meets burst"][1] == "NO"
    # two copies on the shared tier: 2 x 0.988 TB
    assert cols["capacity needed (TB)"][1] == f"{2 * 14 * P / 1e12:,.3g}"
    assert "does NOT meet it" in headline_text(p, "shared")


def test_checkpoint_on_notice_table_and_headline():
    p = CheckpointApp(query="")
    P = catalog.model("llama3-70b").params
    node_gb = 14 * P / 128 / 1e9                                  # 7.72 GB per node
    t = plot_json(p, "notice")["data"][0]
    cols = dict(zip(t["header"]["values"], t["cells"]["values"]))
    assert cols["cloud"] == ["AWS", "GCP", "AWS", "GCP"]
    # AWS: 5 s polling + 7.72 GB / 5 GB/s = 6.5 s of 120; GCP: 1.5 s of 30
    assert cols["detect + write (s)"][:2] == [f"{5 + node_gb / 5:,.1f}", f"{node_gb / 5:,.1f}"]
    assert cols["fits"][:2] == ["yes", "yes"]
    assert headline_text(p, "notice") == (f"AWS 120 s: yes ({5 + node_gb / 5:,.1f} s) / "
                                          f"GCP 30 s: yes ({node_gb / 5:,.1f} s)")
    # a slow local disk: 7.72 GB / 0.2 GB/s = 38.6 s misses GCP's 30 s, not AWS's 2 min
    p.set(local_write_gb_per_s=0.2)
    assert f"GCP 30 s: no ({node_gb / 0.2:,.1f} s)" in headline_text(p, "notice")
    assert "AWS 120 s: yes" in headline_text(p, "notice")
    fits = storage.checkpoint_on_notice(node_gb * 1e9, 0.2, storage.GCP_SPOT_NOTICE_S, 0.0).fits
    assert not fits


def test_seed_claims_in_the_notes():
    p = CheckpointApp(query="")
    notes = html.unescape(p.notes.value)
    # 500 x 30 s = 4.17 h, 500 x 60 s = 8.33 h; 5-8 h is 36-57.6 s each
    assert f"the arithmetic gives {500 * 30 / 3600:.1f}-{500 * 60 / 3600:.1f} h" in notes
    assert "4.2-8.3 h" in notes and "36-58 s each" in notes
    # a 30-60 s sync stall of 987.75 GB needs 16.5-32.9 GB/s of shared write
    S = 14 * catalog.model("llama3-70b").params
    assert f"{S / 60e9:,.1f}-{S / 30e9:,.1f} GB/s" == "16.5-32.9 GB/s"
    assert "needs 16.5-32.9 GB/s of shared write" in notes
    # 70B in 3-5 s: one node 197.6-329.3 GB/s; bf16 weights (2 B/param) 28.2-47.0 GB/s; or
    # the full state over ceil(987.75 / (5 x 5)) = 40 to ceil(987.75 / (3 x 5)) = 66 nodes
    P = catalog.model("llama3-70b").params
    assert f"{14 * P / 5e9:,.0f}-{14 * P / 3e9:,.0f} GB/s" in notes
    assert f"{2 * P / 5e9:,.1f}-{2 * P / 3e9:,.1f} GB/s" in notes and "28.2-47.0 GB/s" in notes
    n5, n3 = math.ceil(14 * P / (5 * 5e9)), math.ceil(14 * P / (3 * 5e9))
    assert (n5, n3) == (40, 66) and f"sharded over {n5}-{n3} nodes" in notes


def test_data_stall_control_moves_the_useful_share():
    p = CheckpointApp(query="")
    g = p.results.reliability.goodput
    # computed from the dataset tier: greyed out, showing the share the figures use (0)
    assert p.controls["data_stall_share"].disabled and p.controls["data_stall_share"].value == 0
    p.set(data_stall="custom", data_stall_share=0.1)     # a measured share
    assert p.last_error is None and p.scenario.data_stall == "custom"
    assert headline_text(p, "useful") == f"{g * 0.9:.2%}"
    assert headline_text(p, "goodput") == f"{g:.2%} (async)"     # checkpoints unchanged

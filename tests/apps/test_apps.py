"""App logic without a browser: controls change the headline and the plots' data to what the
library computes; bad values are refused next to their control; links and files round-trip."""

import contextlib
import html
import io
import json
import re

import numpy as np
import pytest
from test_storage_app import arr

from llmcost import review
from llmcost.apps.checkpoints_app import CheckpointApp
from llmcost.apps.plotview import figure_json, shown_figure
from llmcost.apps.registry import titles
from llmcost.apps.report import report_scenario
from llmcost.apps.review_app import ReviewApp
from llmcost.apps.sizing_app import SizingApp
from llmcost.apps.spot_app import SpotApp
from llmcost.apps.tco_app import TcoApp
from llmcost.apps.utilization_app import UtilizationApp
from llmcost.economics import spot, tco
from llmcost.scenario import Scenario


def headline_text(panel, key):
    """The figure shown (without the flag note under it)."""
    m = re.search(r"<div class='llmc-headline-value'>(.*?)</div>", panel.headline_html[key])
    return m.group(1).replace("&amp;", "&")


def plot_json(panel, name):
    fig = shown_figure(panel.outputs[name])
    assert fig is not None, f"plot {name} empty"
    return fig


def test_review_app_matches_library_and_updates():
    p = ReviewApp(query="")
    ref = review.evaluate(Scenario())
    lo, hi = ref.forecast.days_band
    shown = review.format_headline("days", ref.headline["days"])
    # the forecast with its band over comparable published runs and the floor beside
    assert headline_text(p, "days") == (
        f"{shown} (80% band {lo:,.1f}-{hi:,.1f} from {ref.forecast.realized.runs} published runs; "
        f"floor {ref.forecast.floor_days:,.1f})")
    wf = plot_json(p, "waterfall")
    np.testing.assert_allclose(wf["data"][0]["y"][0], ref.economics.waterfall["tflops_per_gpu"].iloc[0])
    p.set(gpus=512)
    new = review.evaluate(Scenario(gpus=512))
    assert headline_text(p, "gpus") == "512"
    assert headline_text(p, "days").startswith(review.format_headline("days", new.headline["days"]) + " (")
    assert new.headline["days"] > ref.headline["days"]
    costs = plot_json(p, "costs")
    np.testing.assert_allclose(costs["data"][0]["y"], list(new.economics.costs_usd.values()))
    assert p.last_error is None


def test_bad_value_shows_message_and_keeps_last_results():
    p = ReviewApp(query="")
    before = headline_text(p, "days")
    p.set(gpus=-8)
    # in the words of the control, with the allowed range
    assert p.errors["gpus"].value == "GPUs must be between 1 and 131,072, got -8"
    assert headline_text(p, "days") == before and p.scenario.gpus == 1024
    p.set(tokens=0.0)
    assert "tokens" in p.errors["tokens"].value
    p.set(gpus=256)   # a good value clears the message and applies
    assert p.errors["gpus"].value == "" and headline_text(p, "gpus") == "256"


def test_query_string_preloads_and_warns():
    p = ReviewApp(query="model=llama3-8b&gpus=64&theme=dark")
    assert p.controls["model"].value == "llama3-8b" and p.controls["gpus"].value == "64"
    assert p.warning_box.value == ""
    bad = ReviewApp(query="gpus=-5&foo=1&model=nope")
    assert bad.scenario == Scenario()
    for word in ("gpus", "foo", "model"):
        assert word in bad.warning_box.value
    assert "review.ipynb?model=llama3-8b&amp;gpus=64" in p.share.value


def test_save_and_load_json():
    p = SpotApp(query="")
    s = Scenario(preemptions_per_day=1.0, spot_discount=0.5, price_source="custom",
                 spot_lost_work="custom", lost_hours_per_preemption=1.5)
    p._on_upload({"new": [{"content": memoryview(s.to_json().encode())}]})
    assert p.scenario == s and p.controls["preemptions_per_day"].value == 1.0
    r = review.evaluate(s).reliability
    expect = spot.spot_net_savings(spot.SpotMarket(0.5, 1.0), 1.5,
                                   spot.RunFailures(r.restart_h, r.failures_per_day,
                                                    r.lost_hours_per_interruption)).net_savings
    assert headline_text(p, "net") == f"{expect:.1%}"
    assert "scenario.json" in p.download.value


def test_old_saved_files_keep_their_meaning():
    # a file saved by 0.1 priced 8-GPU nodes: read per GPU, with a note, and its prices used
    old = {"on_demand_usd_per_node_hour": 40.0, "onprem_capex_usd_per_node": 240000,
           "node_failures_per_1000_node_days": 6.5, "spot_usd_per_node_hour": 16.0}
    s, notes = Scenario.from_json(json.dumps(old))
    assert s.on_demand_usd_per_gpu_hour == 5.0 and s.onprem_capex_usd_per_gpu == 30000
    assert s.failures_per_1000_gpu_days == pytest.approx(6.5 / 8)
    assert s.spot_discount == pytest.approx(0.6)
    assert s.price_source == "custom" and s.failure_rate == "custom"
    assert len(notes) == 4 and all("old name" in n for n in notes)


def test_tco_app_breakeven():
    p = TcoApp(query="")
    p.set(utilization=0.5)
    res = review.evaluate(Scenario(utilization=0.5))
    # at 50%: the rule's H100 on-demand offer (RunPod, $21.52 per 8 GPUs: $2.69) x 730 x 0.5
    # = $981.85 per GPU-month of cloud against the per-GPU capex (server $31,250 + network +
    # storage) and monthly opex of tco.OnPrem
    prem = res.economics.onprem
    opex = tco.onprem_opex_usd_per_gpu_month(prem, 0.5)
    be = tco.breakeven_months(21.52 / 8, prem.capex_usd, 0.5, opex)
    assert be == pytest.approx(prem.capex_usd / (21.52 / 8 * 730 * 0.5 - opex))
    assert headline_text(p, "breakeven_months") == f"{be:,.1f} months"
    assert set(p.figures) == {"curves", "map", "tornado"}


def test_spot_app_seed_numbers():
    # the seed's link: 60% off, 2.4 preemptions a day, 1.5 h lost, no restart, no failures
    p = SpotApp(query="price_source=custom&spot_discount=0.6&spot_lost_work=custom"
                             "&lost_hours_per_preemption=1.5&restart_s=0&failure_rate=custom"
                             "&failures_per_1000_gpu_days=0.0001")
    assert headline_text(p, "net") == "52.9%"         # 1 - 0.4 / (1 - 2.4 x 1.5 / 24)
    assert headline_text(p, "implied").startswith("4.87")
    p.set(preemptions_per_day=0.0)
    assert headline_text(p, "net") == "60.0%"


def test_spot_controls_show_what_the_figures_use():
    # before: a control showed 20 preemptions a day while the figures used 0; now a derived
    # figure is shown greyed out with the value in use
    p = SpotApp(query="")
    sp = p.results.economics.spot
    assert p.controls["lost_hours_per_preemption"].disabled
    # shown to six significant digits
    assert p.controls["lost_hours_per_preemption"].value == pytest.approx(
        sp.lost_hours_per_preemption, rel=1e-5)
    # the rule's offers: GCP a3-highgpu-8g spot $13.92 against RunPod on demand $21.52 (per
    # 8 GPUs): 0.3532
    assert p.controls["spot_discount"].value == round(1 - 13.92 / 21.52, 4)
    p.set(spot_lost_work="custom")          # custom starts from the figure on screen
    assert not p.controls["lost_hours_per_preemption"].disabled
    assert p.scenario.lost_hours_per_preemption == pytest.approx(sp.lost_hours_per_preemption,
                                                                 rel=1e-5)
    p.set(preemptions_per_day=20.0)         # never finishes: answered, and the control agrees
    assert p.controls["preemptions_per_day"].value == p.scenario.preemptions_per_day


@pytest.mark.parametrize("typed, count, shown", [("100,000", 100_000, "100,000"),
                                                  ("16k", 16_000, "16,000"), ("2048", 2048, "2,048")])
@pytest.mark.slow
def test_counts_are_typed_as_people_write_them(typed, count, shown):
    # "100,000" could not be typed in the GPUs box (a number box refuses the comma)
    p = SizingApp(query="")
    p.controls["gpus"].value = typed
    assert p.errors["gpus"].value == "" and p.scenario.gpus == count
    assert p.controls["gpus"].value == shown


def test_stale_error_is_cleared_by_a_later_success():
    p = ReviewApp(query="")
    p.set(gpus=-8)
    assert p.errors["gpus"].value
    p.set(tokens=3e12)
    assert p.errors["gpus"].value == "" and p.controls["gpus"].value == "1,024"
    assert p.status.value == ""


def box_classes(panel, key: str) -> set[str]:
    """The CSS classes of a headline box, as the page renders it."""
    m = re.search(rf"<div class='([^']*\bllmc-box-{key}\b[^']*)'>", panel.headline_box.value)
    return set(m.group(1).split()) if m else set()


def test_infeasible_headline_is_coloured():
    p = ReviewApp(query="model=llama3-405b&gpus=8&tokens=15000000000000")
    assert "llmc-flag-infeasible" in box_classes(p, "fits")
    assert {"llmc-flag-infeasible", "llmc-flag-implausible"} & box_classes(p, "days")


def test_utilization_app_flags_a_sparse_peak():
    p = UtilizationApp(query="")
    assert "plausible" in p.notes.value
    p.set(measured_peak_tflops=1978.9)
    assert "sparsity" in p.notes.value
    p.set(measured_peak_tflops=0.0, measured_wall_clock_s=5000.0)   # dense peak, 2x faster
    assert "above any large published run" in p.notes.value        # ~80%: rarer than any
    u = review.measured_utilization(Scenario(measured_wall_clock_s=5000.0)).effective_utilization
    assert headline_text(p, "effective_utilization") == f"{u:.1%}" and u > 0.6


def test_checkpoint_app_async_cuts_the_stall():
    # sync to a 20 GB/s tier (the defaults: async, a tier scaling with the nodes)
    p = CheckpointApp(query="checkpoint_mode=sync&shared_storage_gb_per_s=20")
    sync = p.results.reliability.checkpoint_stall_s
    p.set(checkpoint_mode="async")
    assert p.results.reliability.checkpoint_stall_s < sync / 10
    assert p.results.reliability.goodput > 0.97


@pytest.mark.slow
def test_sizing_app_measured_scaling_upload():
    p = SizingApp(query="")
    csv = "nodes,tokens_per_s\n1,1000\n2,1950\n4,3800\n8,4800\n"
    p._on_scaling({"new": [{"content": memoryview(csv.encode())}]})
    assert "cliff between 4 and 8" in p.scaling_note.value
    assert shown_figure(p.scaling_out) is not None
    from llmcost import plots
    fig = plots.measured_scaling(p.measured)
    np.testing.assert_allclose(fig.data[0].y, [1.0, 0.975, 0.95, 0.6])   # 1950/2/1000 ...
    p.set(sizing="days", target_days=60.0)
    assert headline_text(p, "meets_target") == "yes"


def test_report_carries_every_scenario_from_the_same_results(tmp_path):
    p = ReviewApp(query="model=llama3-8b&gpus=64")
    path = p.report(tmp_path)
    text = path.read_text()
    assert text.startswith("<!doctype html>") and "Days to train" in text
    # the headline figures are the app's own texts, and the link is the app's
    for label, shown, *_ in p.headline(p.results).values():
        assert html.escape(shown) in text
    assert "review.ipynb?model=llama3-8b&amp;gpus=64" in text
    assert text.count("Plotly.newPlot") == len(p.figures)
    p.pin()
    p.set(gpus=128)
    both = p.report(tmp_path / "ab").read_text()
    for label, shown, *_ in p.headline(p.pinned_results[0][1]).values():
        assert html.escape(shown) in both               # A's figures
    assert "b.gpus=128" in both
    g = SpotApp(query="").report(tmp_path)
    assert "Net savings" in g.read_text()


@pytest.mark.slow
def test_every_app_builds_without_errors():
    for cls in (ReviewApp, UtilizationApp, TcoApp, SpotApp,
                SizingApp, CheckpointApp):
        p = cls(query="")
        assert p.last_error is None and p.status.value == "" and p.figures
        assert p.name in titles()
        for name, out in p.outputs.items():
            assert shown_figure(out) is not None, f"{cls.__name__}: plot {name} empty"
        json.dumps(figure_json(next(iter(p.figures.values()))))


def test_prices_follow_the_gpu_in_the_app():
    p = TcoApp(query="")
    p.set(gpu="a100-40gb")      # AWS p4d: 8x A100 40GB, $21.96 on demand, $10.80 spot
    assert p.controls["on_demand_usd_per_gpu_hour"].value == pytest.approx(21.96 / 8)
    assert p.controls["on_demand_usd_per_gpu_hour"].disabled
    assert p.controls["spot_discount"].value == round(1 - 10.80 / 21.96, 4)     # 0.5082
    assert p.controls["reserved_3y_usd_per_gpu_hour"].value == 0.0
    # DGX A100 list price $199,000 and 6.5 kW, per GPU
    assert p.controls["onprem_capex_usd_per_gpu"].value == pytest.approx(199_000 / 8)
    assert p.controls["onprem_power_kw_per_gpu"].value == pytest.approx(6.5 / 8)
    prem = p.results.economics.onprem
    be = tco.breakeven_months(21.96 / 8, prem.capex_usd, 0.9,
                              tco.onprem_opex_usd_per_gpu_month(prem, 0.9))
    assert headline_text(p, "breakeven_months") == f"{be:,.1f} months"


def test_the_fabric_follows_the_gpu_and_its_bandwidth_shows_the_one_in_use():
    # fabric=auto (the default): the GPU's systems' fabric; the greyed bandwidth box shows
    # the figure the results use (DGX A100: HDR 200 Gb/s = 25 GB/s; DGX H100: NDR, 50 GB/s)
    p = ReviewApp(query="gpu=a100-80gb&gpus=64")
    ctl = p.controls["fabric"]
    assert ctl.value == "auto" and ctl.options[0] == ("auto: the GPU's usual", "auto")
    bw = p.controls["fabric_gb_per_s_per_gpu"]
    assert bw.disabled and bw.value == 25.0 and p.results.to_json()["fabric"] == "ib-hdr"
    p.set(gpu="h100-sxm")
    assert bw.value == 50.0 and p.results.to_json()["fabric"] == "ib-ndr"
    assert "fabric" not in p.query()


def test_utilization_app_compares_with_the_published_run_of_the_same_model():
    # Llama 3 405B reached 43% MFU (arXiv:2407.21783); a claim of about twice that is suspect.
    p = UtilizationApp(query="model=llama3-405b&measured_seq_len=8192")
    u = p.results.effective_utilization
    p.set(measured_wall_clock_s=p.scenario.measured_wall_clock_s * u / 0.86)
    assert p.results.published_mfu == pytest.approx(0.43)
    assert "0.43" in p.notes.value or "43.0%" in p.notes.value
    assert "sparsity" in p.notes.value


@pytest.mark.slow
def test_sizing_app_shows_the_ladder_of_the_cli(capsys):
    from llmcost.cli import main
    p = SizingApp(query="model=llama2-7b&finetune_tokens=1000000000")
    table = plot_json(p, "ladder")["data"][0]["cells"]["values"]
    # the app pretrains on the review's tokens (2e12 by default)
    assert main(["ladder", "--model", "llama2-7b", "--finetune-tokens", "1e9", "--pretrain-tokens", "2e12",
                 "--json"]) == 0
    rungs = [r for r in json.loads(capsys.readouterr().out)["rungs"] if r["method"] != "pretrain"]
    # the fine-tune rungs are the command's; the pretraining rung is the page's own review
    # (its GPUs, days and on-demand dollars), not a second estimate of the same run
    e = p.results.economics
    shown = dict(zip(table[0], table[4]))
    assert shown.pop("pretrain") == f"${e.costs_usd['on_demand']:,.0f}"
    assert shown == {r["method"]: f"${r['cost_usd']:,.0f}" for r in rungs}
    assert all("$" not in note for note in table[5])     # plotly would typeset it as LaTeX
    costs = [float(x.strip("$").replace(",", "")) for x in table[4]]
    assert costs == sorted(costs)


def test_user_catalog_rows_reach_the_apps():
    from llmcost import catalog
    cat = catalog.default().with_rows("prices", [dict(
        id="my-deal", provider="negotiated", instance="8x H100", gpu="h100-sxm", gpus=8,
        on_demand_usd_per_hour=16.0, spot_usd_per_hour=8.0)])
    p = ReviewApp(query="price_offer=my-deal", catalog=cat)
    assert "my-deal" in [v for _, v in p.controls["price_offer"].options]
    assert p.results.inputs.price_offer == "my-deal"
    assert p.controls["on_demand_usd_per_gpu_hour"].value == 2.0        # $16 / 8 GPUs
    assert p.controls["spot_discount"].value == 0.5                      # 1 - 8 / 16
    e = p.results.economics
    assert e.costs_usd["on_demand"] == pytest.approx(e.run_hours * 1024 * 2.0)


def test_an_unpriced_gpu_shows_no_price_in_its_controls():
    # GB300 has no cited price: the greyed price boxes show 0 (none), not H100's $6.88
    p = ReviewApp(query="gpu=gb300&fabric=ib-xdr")
    assert p.results.inputs.prices is None
    for name in ("on_demand_usd_per_gpu_hour", "reserved_1y_usd_per_gpu_hour",
                 "reserved_3y_usd_per_gpu_hour", "spot_discount", "onprem_capex_usd_per_gpu"):
        assert p.controls[name].disabled and p.controls[name].value == 0.0, name
    assert headline_text(p, "cost_on_demand_usd") == "n/a"


@pytest.mark.parametrize("content", [b"[[[[", b"[" * 100_000 + b"]" * 100_000, b'"a string"',
                                     b"\xff\xfe{", b"{}" + b" " * 300_000])
def test_a_failed_load_changes_nothing_and_says_why(content):
    # unreadable, deep, huge or non-object files leave every control as it was
    p = ReviewApp(query="gpus=64")
    before = {k: w.value for k, w in p.controls.items()}
    p._on_upload({"new": [{"content": memoryview(content)}]})
    assert {k: w.value for k, w in p.controls.items()} == before and p.scenario.gpus == 64
    assert "nothing changed" in p.warning_box.value


def test_a_file_with_one_bad_value_loads_the_rest_and_names_it():
    p = ReviewApp(query="gpus=64")
    p._on_upload({"new": [{"content": memoryview(b'{"model": "llama3-8b", "gpus": 1' + b"0" * 400 + b"}")}]})
    assert p.scenario.model == "llama3-8b" and p.controls["model"].value == "llama3-8b"
    assert "gpus: expected a number" in p.warning_box.value and len(p.warning_box.value) < 400


@pytest.mark.parametrize("query", ["", "model=llama3-8b&gpus=96&sizing=days&target_days=20"])
@pytest.mark.slow
def test_sizing_app_days_curve_passes_through_its_headline(query):
    # through the app: the shown days-vs-GPUs curve (sized by GPUs or by days) goes through
    # the point the app plots, which is the headline's days at the headline's GPUs
    p = SizingApp(query=query)
    r = review.evaluate(p.scenario)
    fig = plot_json(p, "days")
    line, point = fig["data"][0], fig["data"][1]
    x, y = arr(line["x"]), arr(line["y"])
    assert line["mode"] == "lines" and len(x) >= 100
    g, d = r.headline["gpus"], r.headline["days"]
    assert list(arr(point["x"])) == [g] and list(arr(point["y"])) == pytest.approx([d])
    on_curve = list(y[x == g])
    assert on_curve == [pytest.approx(d, rel=1e-9)]
    assert headline_text(p, "days").startswith(review.format_headline("days", d))


@pytest.mark.slow
def test_the_reports_assumptions_name_the_gpus_and_layout_the_figures_used():
    # sizing by days used thousands of GPUs while the report's assumptions said
    # the GPUs box's 1,024
    p = ReviewApp(query="model=llama3-70b&gpu=h100-sxm&tokens=15e12&sizing=days"
                               "&target_days=30&gpus=1024")
    sized = p.results.plan.gpus
    assert sized != 1024
    rows = dict(report_scenario(p, "", p.scenario, p.results, {}).assumptions)
    assert rows["GPUs"] == f"{sized:,} (sized for the days)"
    assert rows["Layout used"] == p.results.plan.layout.description
    assert f"{sized:,} (sized for the days)" in p.report_html(share_url="http://x/")


def test_the_cost_table_shows_the_figures_of_review_json():
    # cash and amortized cost per option were only bars and hover text
    import json as _json

    from llmcost.cli import main as cli_main
    from llmcost.review.format import usd_text
    query = "model=llama3-70b&gpu=h100-sxm&gpus=1024&tokens=15e12"
    p = ReviewApp(query=query)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli_main(["review", "--query", query, "--json"]) == 0
    r = _json.loads(buf.getvalue())
    (table,) = p.tables(p.results)
    by_label = {row[0]: row for row in table["rows"]}
    from llmcost.review import OPTION_LABELS
    assert set(by_label) == {OPTION_LABELS[k] for k in r["costs_usd"]}
    for k, cash in r["costs_usd"].items():
        row = by_label[OPTION_LABELS[k]]
        assert row[1] == f"{r['run_days'][k]:,.1f}"
        assert row[2] == usd_text(cash) and row[3] == usd_text(r["costs_amortized_usd"][k])
        assert row[4] == usd_text(r["usd_per_used_gpu_hour"][k])
    # a reservation's cash is its whole term, its amortized share the run's hours of it
    assert r["costs_usd"]["reserved_3y"] > r["costs_amortized_usd"]["reserved_3y"]
    assert "llmc-cost-table" in p.tables_box.value and usd_text(r["costs_usd"]["spot"]) in p.tables_box.value
    html = p.report_html(share_url="http://x/")
    assert "Cost by way to pay" in html and usd_text(r["costs_usd"]["on_prem"]) in html


@pytest.mark.parametrize("cls", [ReviewApp, SizingApp])
@pytest.mark.slow
def test_a_config_json_upload_becomes_the_model_and_its_link(cls):
    # a reviewer's own model in the apps, as the CLI's --model-config takes it
    from pathlib import Path

    from llmcost.training import hf_config
    text = (Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "qwen3-8b.json").read_text()
    p = cls(query="")
    p._on_upload({"new": [{"name": "config.json", "content": memoryview(text.encode())}]})
    m, _ = hf_config.model_from_config(hf_config.read_config(text))
    assert p.scenario.model == "config" and p.results.inputs.model.params == m.params
    assert "Loaded a config.json" in p.warning_box.value and "36 layers" in p.warning_box.value
    again = cls(query=p.share_link().split("?", 1)[1])
    assert again.scenario == p.scenario
    assert again.headline(again.results) == p.headline(p.results)


def test_a_broken_config_json_changes_nothing_and_says_why():
    p = ReviewApp(query="")
    before = p.scenario
    p._on_upload({"new": [{"name": "config.json",
                           "content": memoryview(b'{"model_type": "llama", "hidden_size": -5}')}]})
    assert p.scenario == before and "nothing changed" in p.warning_box.value


@pytest.mark.slow
def test_the_provider_control_prices_from_its_offers_or_says_why_not_beside_it():
    p = ReviewApp(query="model=llama3-8b&gpus=64&tokens=1e11")
    assert p.controls["provider"].value == "any" and "aws" in p.controls["provider"].options
    p.controls["provider"].value = "akash"         # no H100 offer: refused beside the control
    assert p.errors["provider"].value.startswith("provider akash has no offer of h100-sxm")
    assert p.scenario.provider == "any"
    p.controls["provider"].value = "aws"
    assert p.scenario.provider == "aws"
    assert p.results.inputs.scale_out.id == "aws-efa-p5"
    assert set(p.results.inputs.price_offers.values()) == {"aws-p5"}

"""The Serving app in a kernel: its headline is ``llmcost serve --json``'s answer
for the same query (one computation), its figures follow the hand counts of the issue, its
link reproduces it, and bad values are refused next to their control."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmcost.apps.serving_app import ServingApp, serve_query
from llmcost.cli import main
from llmcost.scenario import Scenario

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def cli_serve(capsys, query, *extra):
    capsys.readouterr()
    assert main(["serve", "--query", query, *extra, "--json"]) in (0, None)
    return json.loads(capsys.readouterr().out)


#: (link query, what it exercises)
LINKS = [
    "",                                                             # planner, serve's defaults
    "serve_tp=4&concurrency=64",                                     # a given layout
    "serve_tp=2&weights=fp8&kv=fp8&isl=4096&osl=512&engine=sglang",  # engine's max concurrency
    "ttft_ms_max=200&tpot_ms_max=30",                                # the planner under limits
    "model=qwen3-30b-a3b&gpu=b200&weights=nvfp4&engine=trtllm&serve_tp=4&serve_ep=4",  # MoE
]


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.slow
def test_headline_is_llmcost_serve_json_for_the_same_query(link, capsys):
    p = ServingApp(query=link)
    assert p.results is not None, p.status.value
    want = cli_serve(capsys, serve_query(p.scenario))
    a = p.results.answer
    for key in ("tp", "ep", "concurrency", "ttft_ms", "tpot_ms", "output_tokens_per_s_per_gpu",
                "kv_bytes_per_token", "max_concurrency", "weights_gb_per_gpu", "fits",
                "usd_per_million_output_tokens"):
        assert a[key] == want[key], key
    head = {k: text for k, (_, text, *_) in p.headline(p.results).items()}
    assert head["ttft"] == f"{want['ttft_ms']:,.1f} ms"
    assert head["tpot"] == f"{want['tpot_ms']:,.1f} ms"
    assert head["tokens"] == f"{want['output_tokens_per_s_per_gpu']:,.0f}"
    assert head["max_concurrency"] == f"{want['max_concurrency']:,} sequences"
    assert head["fits"] == ("yes" if want["fits"] else "no")
    assert head["usd"] == f"${want['usd_per_million_output_tokens']['on_demand']:,.3f}"
    assert head["layout"].startswith(f"TP {want['tp']}, EP {want['ep']}")
    assert not p.status.value and set(p.figures) == {"pareto", "memory", "cost"}


def test_defaults_are_serves_and_the_query_names_only_what_is_set():
    # serve's own defaults (llmcost.serving.query.DEFAULTS: h100-sxm, bf16, 1024/1024, vllm)
    # are the Scenario's: the default scenario's query adds no layout, concurrency or limit
    assert serve_query(Scenario()) == ("model=llama3-70b&gpu=h100-sxm&weights=bf16&isl=1024"
                                       "&osl=1024&engine=vllm")
    s = Scenario(serve_tp=8, serve_ep=2, concurrency=32, kv="fp8", ttft_ms_max=250.5)
    assert serve_query(s).endswith("&kv=fp8&tp=8&ep=2&concurrency=32&ttft_ms_max=250.5")


def test_llama3_70b_at_tp8_by_hand():
    # Llama 3 70B: 80 layers x 8 KV heads x 128 dims x (K, V) x 2 bytes = 327,680 bytes per
    # token (320 KiB); weights 70.55e9 parameters x 2 bytes / TP 8 = 17.64 GB per
    # GPU; $ per M output tokens at the rule's on-demand offer, RunPod's $21.52 per 8-GPU hour
    # (data/prices.csv): 2.69 x 1e6 / (3600 x tokens/s per GPU)
    p = ServingApp(query="serve_tp=8&concurrency=128")
    a = p.results.answer
    assert a["kv_bytes_per_token"] == 80 * 8 * 128 * 2 * 2 == 327_680
    assert a["weights_gb_per_gpu"] == pytest.approx(70.55e9 * 2 / 8 / 1e9, rel=0.005)
    x = a["output_tokens_per_s_per_gpu"]
    assert a["usd_per_million_output_tokens"]["on_demand"] == pytest.approx(
        21.52 / 8 * 1e6 / (3600 * x), rel=1e-9)
    # the memory plot stacks weights, KV at 128 in flight, activations, then the free rest of
    # H100's 80 GiB (85.9 GB): the KV bar is 128 x 2,048 tokens x 327,680 B / TP 8
    mem = p.figures["memory"]
    bars = {t.name: t.x[0] for t in mem.data}
    assert bars["weights"] == pytest.approx(a["weights_gb_per_gpu"])
    assert bars["KV cache"] == pytest.approx(128 * 2048 * 327_680 / 8 / 1e9, rel=0.01)
    assert sum(bars.values()) == pytest.approx(80 * 2**30 / 1e9, rel=1e-9)


def test_the_price_option_moves_only_the_dollar_figure():
    p = ServingApp(query="")
    before = p.headline(p.results)
    p.set(price_option="spot")
    after = p.headline(p.results)
    # the rule's offers: GCP spot $13.92 per 8-GPU hour against RunPod's $21.52 on demand
    ratio = (float(after["usd"][1].lstrip("$")) / float(before["usd"][1].lstrip("$")))
    assert ratio == pytest.approx(13.92 / 21.52, abs=0.002)
    assert "Spot" in after["usd"][0] or "spot" in after["usd"][0]
    assert {k: v for k, v in after.items() if k != "usd"} == \
        {k: v for k, v in before.items() if k != "usd"}


def test_a_lower_tpot_limit_gives_a_layout_that_meets_it_at_lower_throughput():
    free = ServingApp(query="").results.answer
    p = ServingApp(query="tpot_ms_max=20")
    a = p.results.answer
    assert free["tpot_ms"] > 20 and a["tpot_ms"] <= 20
    assert a["output_tokens_per_s_per_gpu"] < free["output_tokens_per_s_per_gpu"]
    # the front drawn is the planner's: every point under the limit, throughput rising with TPOT
    front = p.results.pareto
    assert all(pt["tpot_ms"] <= 20 for pt in front)
    ys = [pt["output_tokens_per_s_per_gpu"] for pt in front]
    assert ys == sorted(ys)
    # the table lists serve's candidates, best first: the headline's layout on its first row
    best = a["candidates"][0]
    assert best["tp"] == a["tp"] and best["concurrency"] == a["concurrency"]
    assert f"<td>TP {a['tp']}, EP {a['ep']}</td><td>{a['concurrency']:,}</td>" in \
        p.tables_box.value.split("</tr>")[1]


def test_a_given_layout_is_drawn_against_the_free_planners_front():
    p = ServingApp(query="serve_tp=2&concurrency=16")
    free = ServingApp(query="").results
    assert p.results.pareto == free.pareto
    star = [t for t in p.figures["pareto"].data if t.name == "chosen"][0]
    assert star.x[0] == p.results.answer["tpot_ms"]


def test_a_link_reproduces_the_headline_and_figures():
    p = ServingApp(query="")
    p.set(engine="trtllm", weights="fp8", isl=2048)
    q = p.query()
    assert "engine=trtllm" in q and "weights=fp8" in q and "isl=2048" in q
    again = ServingApp(query=q)
    assert again.scenario == p.scenario
    assert again.headline(again.results) == p.headline(p.results)
    assert again.figures["pareto"].to_dict() == p.figures["pareto"].to_dict()


@pytest.mark.parametrize("field,value,words", [
    ("serve_tp", 3, "divide the 64 attention heads"),   # Llama 3 70B has 64 query heads
    ("isl", 0, "Input tokens per request must be"),
    ("concurrency", -1, "Concurrency (0: best) must be"),
])
def test_a_bad_value_is_named_at_its_control_and_the_figures_stay(field, value, words):
    p = ServingApp(query="")
    head = p.headline(p.results)
    p.set(**{field: value})
    assert words in p.errors[field].value
    assert "Not applied" in p.status.value
    assert p.headline(p.results) == head


def test_nothing_fits_is_an_answer_not_an_error():
    # 405B in BF16 is 811 GB of weights: no layout of one 8-GPU H100 node holds it
    p = ServingApp(query="model=llama3-405b")
    a = p.results.answer
    assert a["fits"] is False and a["feasible"] == 0
    head = p.headline(p.results)
    assert head["fits"][1] == "no" and head["fits"][2].level == "infeasible"
    assert "no layout" in p.figures["pareto"].layout.annotations[0].text


def test_a_config_json_is_served_as_llmcost_serve_model_config_serves_it(capsys):
    # Llama 3.1 8B: 32 layers x 8 KV heads x 128 dims x 2 x 2 bytes = 131,072 (128 KiB)
    path = CONFIGS / "llama3.1-8b.json"
    p = ServingApp(query="serve_tp=1&concurrency=32")
    p._on_upload({"new": [{"name": "config.json",
                           "content": memoryview(path.read_bytes())}]})
    assert p.scenario.model == "config", p.warning_box.value
    a = p.results.answer
    assert a["kv_bytes_per_token"] == 32 * 8 * 128 * 2 * 2 == 131_072
    want = cli_serve(capsys, serve_query(p.scenario), "--model-config", str(path))
    for key in ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_gpu", "max_concurrency",
                "weights_gb_per_gpu"):
        assert a[key] == want[key], key
    again = ServingApp(query=p.share_link().split("?", 1)[1])
    assert again.headline(again.results) == p.headline(p.results)


@pytest.mark.slow
def test_the_notebooks_tinker_cell_prints_the_fp8_headline_and_nothing_in_voila():
    from dataclasses import replace

    from test_notebooks import NOTEBOOKS, tinker_cell_lines
    printed = tinker_cell_lines(NOTEBOOKS[0].parent / "serving.ipynb")
    p = ServingApp(query="")
    other = p.compute(replace(p.scenario, weights="fp8"))
    assert printed == [f"{label}: {text}" for label, text, *_ in p.headline(other).values()]
    assert "TPOT: " in "\n".join(printed)


def test_pinned_scenarios_compare_and_the_report_carries_them(tmp_path):
    p = ServingApp(query="")
    a = p.headline(p.results)
    p.pin()
    p.set(weights="fp8")
    b = p.headline(p.results)
    assert p.query() == "b.weights=fp8"
    table = p.compare_box.value
    for key in ("tpot", "usd"):
        assert f"<td>{a[key][1]}</td><td>{b[key][1]}</td>" in table
    text = p.report(tmp_path).read_text()
    assert a["usd"][1] in text and b["usd"][1] in text and "Weights format" in text


def test_a_link_with_the_clis_fp4_reads_as_nvfp4():
    # `llmcost serve` reads weights=fp4 as NVFP4: a link written the same way does too
    from llmcost.scenario import Scenario
    s, warnings = Scenario.from_query("weights=fp4&gpu=b200")
    assert s.weights == "nvfp4" and warnings == []


# ---------------------------------------------------------------- one answer

def readme_serve_query():
    """The `llmcost serve --query "..."` of the README."""
    import re
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    return re.search(r'llmcost serve +--query "([^"]+)"', text).group(1)


def test_the_readmes_serve_query_opens_with_the_clis_layout_and_figures(capsys):
    q = readme_serve_query()
    assert "&tp=4&" in q and "serve_tp" not in q
    want = cli_serve(capsys, q)
    p = ServingApp(query=q)
    a = p.results.answer
    assert p.link_warnings == [] and p.scenario.serve_tp == want["tp"] == 4
    assert p.scenario.tp == Scenario().tp             # the training layout is untouched
    for key in ("tp", "ep", "concurrency", "ttft_ms", "tpot_ms", "output_tokens_per_s_per_gpu",
                "usd_per_million_output_tokens", "engine_settings", "calibration",
                "concurrency_reason"):
        assert a[key] == want[key], key
    head = p.headline(p.results)
    assert head["layout"][1].startswith(f"TP {want['tp']}, EP 1, {want['concurrency']:,}")
    assert head["ttft"][1] == f"{want['ttft_ms']:,.1f} ms"
    assert head["tpot"][1] == f"{want['tpot_ms']:,.1f} ms"
    assert head["usd"][1] == f"${want['usd_per_million_output_tokens']['on_demand']:,.3f}"
    # the page's own link names the serving layout by its field
    assert "serve_tp=4" in p.query() and "&tp=" not in "&" + p.query()


def test_a_training_tp_is_named_and_not_used():
    # a link that sets training keys (gpus) carries the training layout's tp: the page keeps it
    # for the other apps and says the serving TP is serve_tp
    p = ServingApp(query="gpus=64&tp=8")
    assert p.scenario.tp == 8 and p.scenario.serve_tp == 0
    assert any(w.startswith("tp=8 is the training layout's TP, not used here") and
               "serve_tp (absent: the planner chooses)" in w for w in p.link_warnings)
    assert "pareto" in p.results.answer                 # the planner chose
    both = ServingApp(query="tp=8&serve_tp=4")
    assert both.scenario.serve_tp == 4 and both.results.answer["tp"] == 4
    assert any(w.startswith("tp=8 is the training layout's TP") and "serve_tp=4" in w
               for w in both.link_warnings)
    assert both.warning_box.value.count("tp=8") == 1


def test_serve_keys_the_page_has_no_control_for_are_named():
    p = ServingApp(query="model=llama3-70b&tp=4&concurrency=64&requests_per_s=10")
    assert p.scenario.serve_tp == 4
    assert p.link_warnings == ["requests_per_s=10: a key of llmcost serve this page has no "
                               "control for (its figures are serve's without it)"]


def test_the_page_says_what_tpot_is_calibrated_against_and_why_its_concurrency():
    p = ServingApp(query="")
    a = p.results.answer
    basis = [t for t in p.tables(p.results) if t["cls"] == "llmc-serving-basis"][0]
    rows = dict(map(tuple, basis["rows"]))
    assert rows["TTFT and TPOT calibrated against"] == a["calibration"]
    assert rows["Concurrency"] == a["concurrency_reason"]
    # no concurrency, no limit: the planner's best is the layout's most, which memory sets
    # (under vLLM's 1024 cap on an 80 GiB H100)
    assert a["concurrency"] == a["max_concurrency"] < 1024
    assert a["concurrency_reason"].startswith("the planner's best")
    assert f"at TP {a['tp']} that is the most the KV cache holds: {a['max_concurrency']:,} " \
        "sequences of 2,048 tokens" in a["concurrency_reason"]
    assert rows["vllm 0.10 max_num_seqs"].startswith("1,024 (vllm serve default on GPUs of 70")
    assert "llmc-serving-basis" in p.tables_box.value and \
        "calibrated against" in p.tables_box.value


def test_scheduler_keys_in_a_link_give_serves_figures(capsys):
    q = "serve_tp=4&engine=sglang&max_num_seqs=64&gpu_memory_utilization=0.8"
    p = ServingApp(query=q)
    assert p.link_warnings == [] and p.scenario.max_num_seqs == 64
    want = cli_serve(capsys, serve_query(p.scenario))
    assert "max_num_seqs=64" in serve_query(p.scenario)
    for key in ("concurrency", "max_concurrency", "tpot_ms", "engine_settings"):
        assert p.results.answer[key] == want[key], key
    assert want["concurrency"] == 64
    rows = dict(map(tuple, p.tables(p.results)[-1]["rows"]))
    assert rows["sglang 0.5.4 max_running_requests (max_num_seqs=)"] == "64 (given)"
    assert rows["sglang 0.5.4 mem_fraction_static (gpu_memory_utilization=)"].startswith(
        "0.8 (given); a share of")


def test_a_given_layout_that_does_not_fit_shows_why_and_no_figures():
    # TP 2 leaves 405 GB of Llama 3.1 405B's BF16 weights on each H100: the page says so and
    # prices nothing
    p = ServingApp(query="model=llama3-405b&serve_tp=2&weights=bf16")
    head = p.headline(p.results)
    assert list(head) == ["fits"] and head["fits"][1] == "no"
    assert "405.9 GB of weights per GPU" in head["fits"][2].message
    assert "does not fit" in p.figures["cost"].layout.annotations[0].text
    assert "does not fit" in p.figures["memory"].layout.title.text


def test_a_bad_scheduler_value_is_named_at_its_control():
    p = ServingApp(query="")
    head = p.headline(p.results)
    p.set(max_num_seqs=-1)
    assert "Max running sequences (0: engine default) must be between 0 and 10M sequences, got -1" \
        in p.errors["max_num_seqs"].value
    assert p.headline(p.results) == head
    # a share too small for the weights is an answer, not an error: nothing fits, and why
    p.set(max_num_seqs=0, gpu_memory_utilization=0.05)
    assert not p.errors["gpu_memory_utilization"].value
    a = p.results.answer
    assert a["fits"] is False and p.headline(p.results)["fits"][1] == "no"

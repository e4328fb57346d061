"""One answer per question: `llmcost size`, the ladder's pretraining rung, the sizing app and
`llmcost review` compute a run through the same review chain."""

import json

import pytest

from llmcost import catalog
from llmcost.apps.sizing_app import SizingApp
from llmcost.cli import main
from llmcost.economics import sizing
from llmcost.review import evaluate, ladder
from llmcost.scenario import Scenario

CAT = catalog.default()
PRICED = sorted(sizing.cheapest_on_demand(CAT.prices()))
REL = 1e-9


def run(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def agree(capsys, model, gpu, tokens, days):
    """size, review, the ladder's pretraining rung and the sizing app on one run."""
    q = f"model={model}&gpu={gpu}&tokens={tokens!r}&sizing=days&target_days={days:g}"
    rev = run(capsys, "review", "--query", q)
    # each with its defaults: the same fabric, batch rule, goodput and catalog offer
    size = run(capsys, "size", "--model", model, "--gpu", gpu, "--tokens", repr(tokens),
               "--days", f"{days:g}")
    # the review's default fabric is "auto", the GPU's usual, as `size` without --fabric
    assert rev["scenario"].get("fabric", Scenario().fabric) == "auto"
    assert size["fabric"] == rev["fabric"] == CAT.gpu(gpu).usual_scale_out
    app = SizingApp(query=q).results.to_json()
    rung = next(r for r in ladder(CAT.model(model), CAT, pretrain_tokens=tokens,
                                  pretrain_days=days, gpu_ids=[gpu]).rungs
                if r.method == "pretrain")
    od = rev["costs_usd"]["on_demand"]
    for other in (app,):
        assert other["gpus"] == rev["gpus"]
        assert other["days"] == pytest.approx(rev["days"], rel=REL)
        assert other["costs_usd"]["on_demand"] == pytest.approx(od, rel=REL)
    assert rung.gpus == rev["gpus"] and rung.hours == pytest.approx(rev["days"] * 24, rel=REL)
    assert rung.cost_usd == pytest.approx(od, rel=REL)
    assert size["meets_target"] == rev["meets_target"]
    if size["meets_target"]:
        assert size["gpus"] == rev["gpus"]
        assert size["days"] == pytest.approx(rev["days"], rel=REL)
        assert size["cost_usd"] == pytest.approx(od, rel=REL)
    return rev


@pytest.mark.parametrize("gpu", ["h100-sxm", "b200", "gb200"])
def test_the_issue_run_has_one_answer(capsys, gpu):
    # the issue's question: 70B dense, 15T tokens, 90 days
    rev = agree(capsys, "llama3-70b", gpu, 15e12, 90)
    assert rev["meets_target"] and rev["days"] <= 90


def test_the_sizing_app_agrees_with_the_review_in_gpus_mode():
    q = "model=llama3-8b&gpu=h200&gpus=256&tokens=1e12"
    app = SizingApp(query=q).results.to_json()
    rev = evaluate(Scenario.from_query(q)[0]).to_json()
    assert app["days"] == pytest.approx(rev["days"], rel=REL)
    assert app["costs_usd"] == pytest.approx(rev["costs_usd"], rel=REL)


@pytest.mark.slow
@pytest.mark.parametrize("gpu", PRICED)
@pytest.mark.parametrize("model", list(CAT.models()["id"]))
def test_grid_every_model_on_every_priced_gpu(capsys, model, gpu):
    m = CAT.model(model)
    # about a Chinchilla budget, bounded to the Scenario's token range, in 60 days
    tokens = float(min(max(20 * m.params, 1e9), 1e15))
    rev = evaluate(Scenario(model=model, gpu=gpu, tokens=tokens, sizing="days", target_days=60))
    if "on_demand" not in rev.economics.costs_usd:
        # no layout of the model fits this GPU's memory: no run to price, and the review says so
        assert not rev.to_json()["fits"] and rev.warnings
        return
    agree(capsys, model, gpu, tokens, 60)
    # GPUs mode: the review and the sizing app read one computation
    q = f"model={model}&gpu={gpu}&gpus={rev.to_json()['gpus']}&tokens={tokens!r}"
    app = SizingApp(query=q).results.to_json()
    ref = evaluate(Scenario.from_query(q)[0]).to_json()
    assert app["days"] == pytest.approx(ref["days"], rel=REL)
    assert app["costs_usd"] == pytest.approx(ref["costs_usd"], rel=REL)


def test_ladder_names_each_rungs_offer(capsys):
    # fine-tune rungs rent the cheapest H100 offer (RunPod $21.52 / 8); the pretraining rung is
    # the review's run on its catalog offer (AWS p5 $55.04 / 8), and says so
    d = run(capsys, "ladder", "--model", "llama3-70b", "--gpu", "h100-sxm",
            "--pretrain-tokens", "15e12", "--pretrain-days", "90")
    rev = run(capsys, "review", "--query", "model=llama3-70b&tokens=15e12&sizing=days&target_days=90")
    by = {r["method"]: r for r in d["rungs"]}
    assert by["pretrain"]["price_id"] == rev["price_offer"] == "aws-p5"
    assert by["pretrain"]["usd_per_gpu_hour"] == pytest.approx(55.04 / 8)
    assert by["pretrain"]["cost_usd"] == pytest.approx(rev["costs_usd"]["on_demand"], rel=REL)
    for m in ("lora", "qlora", "full"):
        assert by[m]["price_id"] == "runpod-h100-sxm"
        assert by[m]["usd_per_gpu_hour"] == pytest.approx(21.52 / 8)

"""One answer per question: `llmcost size`, the ladder's pretraining rung, the apps and
`llmcost review` compute a run through the same review chain.

The structural check records the resolved inputs (``stages.resolve``'s :class:`Inputs`) each
entry point hands the chain, on every covering point (tests/points.py), and asserts they are
one object's worth of values; the figures are then checked equal on a few runs here and on
every catalog model x priced GPU in ``make test-grid``."""

import dataclasses
import json

import pytest
from points import POINTS, coverage

from llmcost import catalog
from llmcost.apps.review_app import ReviewApp
from llmcost.apps.sizing_app import SizingApp
from llmcost.cli import main
from llmcost.planning import sizing
from llmcost.planning.ladder import cheapest_on_demand
from llmcost.review import Pretraining, chain, evaluate, ladder, stages
from llmcost.scenario import FIELDS, Scenario

CAT = catalog.default()
PRICED = sorted(cheapest_on_demand(CAT.prices()))
REL = 1e-9


def test_points_cover_the_catalog():
    # every family, GPU generation, stack (and none named), sizing mode, and generation x
    # sizing pair of the catalog has a point: one added without a point fails here
    assert not any(coverage().values()), coverage()


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
    rung = next(r for r in ladder(CAT.model(model), CAT,
                                  pretraining=Pretraining(tokens, days), gpu_ids=[gpu]).rungs
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


@pytest.mark.slow
@pytest.mark.parametrize("gpu", ["h100-sxm", "b200", "gb200"])
def test_the_issue_run_has_one_answer(capsys, gpu):
    # the issue's question: 70B dense, 15T tokens, 90 days
    rev = agree(capsys, "llama3-70b", gpu, 15e12, 90)
    assert rev["meets_target"] and rev["days"] <= 90


@pytest.mark.slow
def test_the_sizing_app_agrees_with_the_review_in_gpus_mode():
    q = "model=llama3-8b&gpu=h200&gpus=256&tokens=1e12"
    app = SizingApp(query=q).results.to_json()
    rev = evaluate(Scenario.from_query(q)[0]).to_json()
    assert app["days"] == pytest.approx(rev["days"], rel=REL)
    assert app["costs_usd"] == pytest.approx(rev["costs_usd"], rel=REL)


class Resolved(BaseException):
    """Raised by the recording chain once the inputs are resolved: no path can catch it as an
    error (apps and the CLI catch Exception), so the first hand-over is what is recorded."""

    def __init__(self, inputs):
        super().__init__("resolved")
        self.inputs = inputs


def _stop_at_resolve(s, cat):
    raise Resolved(stages.resolve(s, cat))


def handed_over(monkeypatch, call):
    """The Inputs an entry point hands the review chain (the chain stops right after)."""
    monkeypatch.setattr(chain, "DEFAULT_CHAIN",
                        dataclasses.replace(chain.DEFAULT_CHAIN, resolve=_stop_at_resolve))
    monkeypatch.setattr(chain, "_CACHE", type(chain._CACHE)())
    with pytest.raises(Resolved) as got:
        call()
    return got.value.inputs


def resolved_values(inp):
    """The inputs as the chain reads them: every field, with the scenario's fabric as the one
    it resolved to ("auto" is the GPU's usual fabric, the same run as naming it)."""
    s = inp.scenario
    if s.fabric == "auto":
        s = dataclasses.replace(s, fabric=inp.scale_out.id)
    return {**{f.name: getattr(inp, f.name) for f in dataclasses.fields(inp)}, "scenario": s}


#: the Scenario fields `llmcost size` and `llmcost ladder` take as flags
SIZE_FLAGS = {"model", "gpu", "tokens", "sizing", "target_days", "precision", "fabric"}


def entry_points(s: Scenario):
    """Every entry point that can state scenario ``s``: name -> a call that reviews it."""
    q = s.to_query()
    paths = {"evaluate": lambda: evaluate(Scenario.from_query(q)[0]),
             "llmcost review": lambda: main(["review", "--query", q, "--json"]),
             "review app": lambda: ReviewApp(query=q),
             "sizing app": lambda: SizingApp(query=q)}
    changed = {f for f in FIELDS if getattr(s, f) != FIELDS[f].default}
    # the ladder prices its rungs from the catalog: only GPUs with an on-demand offer
    priced = s.gpu in PRICED
    days = f"{s.target_days:g}"
    if s.sizing == "days" and priced:
        # the process's catalog when called (another test may have reloaded it since import)
        paths["ladder (library)"] = lambda: ladder(CAT.model(s.model), catalog.default(),
                                                   pretraining=Pretraining(s.tokens, s.target_days, base=s),
                                                   gpu_ids=[s.gpu])
    if s.sizing == "days" and changed <= SIZE_FLAGS:
        paths["llmcost size"] = lambda: main(["size", "--model", s.model, "--gpu", s.gpu,
                                             "--tokens", repr(s.tokens), "--precision",
                                             s.precision, "--days", days, "--json"])
        if s.precision == "bf16" and priced:
            paths["llmcost ladder"] = lambda: main(
                ["ladder", "--model", s.model, "--gpu", s.gpu, "--pretrain-tokens",
                 repr(s.tokens), "--pretrain-days", days, "--json"])
    return paths


#: days-mode points as `size` and the CLI ladder state them (defaults beside the point's model,
#: GPU, tokens and days), so that those two paths are checked on every GPU generation
FLAG_POINTS = [Scenario(model=s.model, gpu=s.gpu, tokens=s.tokens, sizing="days",
                        target_days=s.target_days) for s in POINTS if s.sizing == "days"]


@pytest.mark.parametrize("s", POINTS + FLAG_POINTS,
                         ids=[f"{s.model}-{s.gpu}-{s.stack}-{s.sizing}" for s in POINTS]
                         + [f"{s.model}-{s.gpu}-flags" for s in FLAG_POINTS])
def test_every_entry_point_hands_the_chain_the_same_inputs(monkeypatch, capsys, s):
    paths = entry_points(s)
    got = {name: handed_over(monkeypatch, call) for name, call in paths.items()}
    ref = resolved_values(got["evaluate"])
    assert ref["scenario"].model == s.model and ref["gpu"].id == s.gpu
    for name, inp in got.items():
        values = resolved_values(inp)
        diff = [k for k in ref if values[k] != ref[k]]
        assert not diff, (name, {k: (values[k], ref[k]) for k in diff})
    if s in FLAG_POINTS:
        assert "llmcost size" in got
        if s.gpu in PRICED:
            assert {"llmcost ladder", "ladder (library)"} <= set(got)


def test_the_flag_points_reach_size_and_the_cli_ladder_on_every_priced_generation():
    gens = {CAT.gpu(s.gpu).generation for s in FLAG_POINTS if s.gpu in PRICED}
    assert gens == {CAT.gpu(g).generation for g in PRICED}


@pytest.mark.slow
@pytest.mark.parametrize("s", [p for p in POINTS if p.sizing == "days" and p.gpu in PRICED][:3],
                         ids=lambda s: f"{s.model}-{s.gpu}")
def test_points_have_one_answer(capsys, s):
    agree(capsys, s.model, s.gpu, s.tokens, s.target_days)


@pytest.mark.grid
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


@pytest.mark.slow
def test_ladder_names_each_rungs_offer(capsys):
    # one rule for every rung: the fine-tune rungs and the pretraining rung (the review's run)
    # rent the cheapest H100 on-demand offer (RunPod $21.52 / 8), and say so
    d = run(capsys, "ladder", "--model", "llama3-70b", "--gpu", "h100-sxm",
            "--pretrain-tokens", "15e12", "--pretrain-days", "90")
    rev = run(capsys, "review", "--query", "model=llama3-70b&tokens=15e12&sizing=days&target_days=90")
    by = {r["method"]: r for r in d["rungs"]}
    assert by["pretrain"]["price_id"] == rev["price_offer"] == "runpod-h100-sxm"
    assert by["pretrain"]["usd_per_gpu_hour"] == pytest.approx(21.52 / 8)
    assert by["pretrain"]["cost_usd"] == pytest.approx(rev["costs_usd"]["on_demand"], rel=REL)
    for m in ("lora", "qlora", "full"):
        assert by[m]["price_id"] == "runpod-h100-sxm"
        assert by[m]["usd_per_gpu_hour"] == pytest.approx(21.52 / 8)


def test_one_scenario_runs_the_chain_once_and_sizes_once(capsys, monkeypatch):
    """The review, `size`, the ladder's pretraining rung and the sizing app on one scenario:
    one run of the chain and one `size_cluster` between them (the review cache is shared;
    `size` without --fabric hands the chain the review's own Scenario)."""
    runs, sizes = [], []
    run_chain, size_cluster = chain.ReviewChain._run, sizing.size_cluster

    def counted_run(self, s, cat):
        runs.append(s)
        return run_chain(self, s, cat)

    def counted_size(*args, **kwargs):
        sizes.append(1)
        return size_cluster(*args, **kwargs)

    monkeypatch.setattr(chain.ReviewChain, "_run", counted_run)
    monkeypatch.setattr(sizing, "size_cluster", counted_size)
    chain._CACHE.clear()
    # a run no other test reviews first (the cache is the process's)
    q = "model=llama2-13b&tokens=7.7e11&gpu=h100-sxm&sizing=days&target_days=9"
    run(capsys, "review", "--query", q)
    # the GPU by its alias and the fabric "auto" stands for, named: one resolved run
    run(capsys, "size", "--model", "llama2-13b", "--tokens", "7.7e11", "--gpu", "H100",
        "--fabric", "ib-ndr", "--days", "9")
    run(capsys, "ladder", "--model", "llama2-13b", "--pretrain-tokens", "7.7e11", "--gpu",
        "h100", "--pretrain-days", "9")
    SizingApp(query=q)
    assert len(runs) == 1 and len(sizes) == 1, ([s.to_query() for s in runs], len(sizes))


def test_scenarios_that_resolve_alike_share_one_run_each_with_its_own_link(monkeypatch):
    runs = []
    run_chain = chain.ReviewChain._run
    monkeypatch.setattr(chain.ReviewChain, "_run",
                        lambda self, s, cat: runs.append(s) or run_chain(self, s, cat))
    monkeypatch.setattr(chain, "_CACHE", type(chain._CACHE)())
    base = dict(model="llama3-8b", tokens=3e11, sizing="days", target_days=20.0)
    # "h100" is the catalog's alias of h100-sxm; "auto" the GPU's usual fabric, ib-ndr; 8,192
    # the model's own sequence length
    alias = Scenario(**base, gpu="h100")
    named = Scenario(**base, gpu="h100-sxm", fabric="ib-ndr", seq_len=8192)
    a, b = evaluate(alias), evaluate(named)
    assert len(runs) == 1
    assert a.headline == b.headline and a.predict is b.predict and a.plan is b.plan
    assert (a.scenario, b.scenario, b.inputs.scenario) == (alias, named, named)
    assert a.to_json()["scenario"]["fabric"] == "auto"
    assert b.to_json()["scenario"]["fabric"] == "ib-ndr"
    assert evaluate(named) is b and evaluate(alias) is a
    # fabric=auto with an offer sold on another fabric times on that fabric: a run of its own
    offers = CAT.prices()
    row = offers[(offers["gpu"] == "h100-sxm") & (offers["fabric"] != "ib-ndr")
                 & offers["fabric"].isin(CAT.fabrics()["id"])].iloc[0]
    c = evaluate(Scenario(**base, gpu="h100", price_offer=row["id"]))
    assert len(runs) == 2 and c.inputs.scale_out.id == row["fabric"]

"""Serving: the trained model served - TTFT, TPOT, throughput per GPU, memory and $ per
million output tokens, for a layout or the planner's best under latency limits.

One computation: the scenario's serving fields become the query of ``llmcost serve``
(:func:`serve_query`) and :func:`llmcost.serving.query.answer`, the function the command
runs, answers it; the app only formats that answer."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field, fields
from urllib.parse import parse_qsl, urlencode

from .. import _validate as v
from .. import plots
from ..review import OPTION_LABELS, Flag
from ..scenario import CONFIG_PREFIX, VOILA_PARAMS, Scenario
from .base import Panel
from .page import warning_html

#: serve's query key -> the Scenario field that sets it, where the names differ (tp and ep
#: are the training layout's in a Scenario)
_FIELD_OF = {"tp": "serve_tp", "ep": "serve_ep", "model_config": "model"}


def serve_query(s: Scenario) -> str:
    """The ``llmcost serve --query`` of a scenario's serving fields (0 and auto: the key is
    left out, so serve chooses as it does without it)."""
    q = {"model": s.model, "gpu": s.gpu, "weights": s.weights, "isl": s.isl, "osl": s.osl,
         "engine": s.engine}
    if s.kv != "auto":
        q["kv"] = s.kv
    if s.serve_tp:
        q["tp"] = s.serve_tp
        if s.serve_ep:
            q["ep"] = s.serve_ep
    if s.concurrency:
        q["concurrency"] = s.concurrency
    for key in ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization"):
        if getattr(s, key):
            q[key] = getattr(s, key)
    for key in ("ttft_ms_max", "tpot_ms_max"):
        x = getattr(s, key)
        if x:
            q[key] = int(x) if float(x).is_integer() else x
    return urlencode(q)


def serve_link(query: str) -> tuple[str, list[str]]:
    """A link's query as the Serving page reads it, and what the page does not use of it.

    A ``llmcost serve`` query (every key one serve takes) names the serving layout ``tp`` and
    ``ep``: read as ``serve_tp``/``serve_ep`` when it gives no ``serve_tp``, so the page shows
    serve's figures. In any other link (it sets training keys too) ``tp``/``ep`` are the
    training layout's: kept for the other pages and named as unused here. Serve's keys the
    page has no control for are named and left out."""
    from ..serving.query import KEYS
    pairs = parse_qsl((query or "").lstrip("?"), keep_blank_values=True)
    own = [k for k, _ in pairs if k not in VOILA_PARAMS and not k.startswith(("b.", "c."))]
    fields_ = {f.name for f in fields(Scenario)}
    serve_only = set(KEYS) - fields_ - {"tp", "ep"}
    is_serve = bool(own) and set(own) <= set(KEYS)
    notes, out = [], []
    for k, x in pairs:
        if k in serve_only:
            notes.append(f"{k}={x}: a key of llmcost serve this page has no control for "
                         "(its figures are serve's without it)")
            continue
        if k in ("tp", "ep"):
            alias = "serve_" + k
            if is_serve and "serve_tp" not in own:
                out.append((alias, x))
                continue
            notes.append(f"{k}={x} is the training layout's {k.upper()}, not used here: the "
                         f"serving {k.upper()} is " + (
                             f"{alias}={dict(pairs)[alias]}" if alias in own else
                             f"{alias} (absent: " + ("the planner chooses" if k == "tp" else
                                                     "1 or the planner's") + ")"))
        out.append((k, x))
    return urlencode(out), notes


@dataclass(frozen=True)
class ServingResults:
    """``llmcost serve``'s answer for a scenario, with what the plots add to it."""
    scenario: Scenario
    query: str
    answer: dict
    #: the planner's Pareto front (tokens/s per GPU against TPOT) the answer sits on
    pareto: list
    memory_gb: float
    notes: list = field(default_factory=list)


def _config_model(s: Scenario):
    from ..training import hf_config
    if not s.model_config:
        raise v.InputError("model", "model=config needs the config.json's fields "
                                    "(load one with the file button)")
    fields_ = hf_config.fields_from_query({CONFIG_PREFIX + k: x
                                           for k, x in json.loads(s.model_config).items()})
    m, warnings = hf_config.model_from_config(fields_, id="config")
    return m, list(warnings)


@functools.lru_cache(maxsize=64)
def evaluate_serving(s: Scenario, cat) -> ServingResults:
    """The serving answer of ``s`` (cached per frozen Scenario and catalog)."""
    from ..serving.query import answer
    model, notes = _config_model(s) if s.model == "config" else (None, [])
    if s.serve_ep and not s.serve_tp:
        notes.append("Serving EP applies to a given serving TP: the planner chooses EP with TP")
    q = serve_query(s)
    try:
        ans = answer(q, cat=cat, model=model)
        pareto = ans.get("pareto")
        if pareto is None and "tpot_ms" in ans:
            # a given layout: the front it is measured against, every layout and concurrency
            free = serve_query(Scenario(**{**s.to_dict(), "serve_tp": 0, "serve_ep": 0,
                                           "concurrency": 0}))
            pareto = answer(free, cat=cat, model=model).get("pareto") or []
    except v.InputError as e:
        raise v.InputError(_FIELD_OF.get(e.param, e.param), str(e)) from None
    gpu = cat.gpu(s.gpu)
    return ServingResults(scenario=s, query=q, answer=ans, pareto=pareto or [],
                          memory_gb=gpu.memory_bytes / 1e9,
                          notes=notes + list(ans.get("notes", [])))


class ServingApp(Panel):
    name = "serving"
    title = "Serving"
    question = ("What does serving the model cost: TTFT, TPOT, tokens/s per GPU and $ per "
                "million output tokens, on which GPUs and layout?")
    order = 60
    card_keys = ("usd", "tokens")
    intro = ("The model served in a closed loop at a fixed concurrency, prefill and decode on "
             "the same GPUs (aggregated): weights by format, the KV cache beside them, TTFT "
             "(queueing included) and TPOT from the engine's fitted efficiencies "
             "(TensorRT-LLM's perf-overview throughput, vLLM's latency benchmark). TP 0 asks "
             "the planner for the layout and concurrency with the most output tokens/s per "
             "GPU under the TTFT and TPOT limits. Prices per GPU-hour: the GPU's first catalog "
             "offer, its purchase amortized at full use. The same figures as "
             "“llmcost serve --query ...”.")
    fields = ("model", "gpu", "serve_tp", "serve_ep", "weights", "kv", "isl", "osl",
              "concurrency", "engine", "max_num_seqs", "max_num_batched_tokens",
              "gpu_memory_utilization", "ttft_ms_max", "tpot_ms_max", "price_option")
    group_titles = {**Panel.group_titles, "serving": "Serving"}
    figures_from = (("pareto", "_pareto"), ("memory", "_memory"), ("cost", "_cost"))

    def __init__(self, scenario: Scenario | None = None, query: str | None = None,
                 catalog=None, **kw):
        notes = []
        if scenario is None:
            query = os.environ.get("QUERY_STRING", "") if query is None else query
            query, notes = serve_link(query)
        super().__init__(scenario, query, catalog, **kw)
        self._add_link_notes(notes)

    def apply_query(self, query: str) -> bool:
        query, notes = serve_link(query)
        todo = super().apply_query(query)
        self._add_link_notes(notes)
        return todo

    def _add_link_notes(self, notes: list) -> None:
        """What :func:`serve_link` did not use, first among the link's warnings."""
        if not notes:
            return
        self.state.link_warnings = notes + [w for w in self.state.link_warnings
                                            if w not in notes]
        if hasattr(self, "warning_box"):
            self.warning_box.value = warning_html(self.state.link_warnings)

    def compute(self, s: Scenario) -> ServingResults:
        return evaluate_serving(s, self.catalog)

    def headline(self, res: ServingResults) -> dict:
        a = res.answer
        if a.get("tpot_ms") is None:
            # no layout fits, or the given one does not: memory figures only, no run to time
            why = "; ".join(a.get("notes", [])) or "nothing fits"
            return {"fits": ("Fits", "no", Flag("fits", "infeasible", why))}
        layout = f"TP {a['tp']}, EP {a['ep']}, {a['concurrency']:,} in flight"
        out = {"layout": ("Layout (planner's best)" if "pareto" in a else "Layout", layout,
                          None),
               "ttft": ("TTFT", f"{a['ttft_ms']:,.1f} ms", None),
               "tpot": ("TPOT", f"{a['tpot_ms']:,.1f} ms", None),
               "tokens": ("Output tokens/s per GPU", f"{a['output_tokens_per_s_per_gpu']:,.0f}",
                          None),
               "max_concurrency": ("Max concurrency", f"{a['max_concurrency']:,} sequences",
                                   None)}
        out["fits"] = ("Fits", "yes" if a["fits"] else "no",
                       None if a["fits"] else Flag("fits", "infeasible",
                                                   "; ".join(a.get("notes", [])) or
                                                   "does not fit"))
        opt = res.scenario.price_option
        usd = a.get("usd_per_million_output_tokens", {}).get(opt)
        out["usd"] = (f"$ per M output tokens ({OPTION_LABELS.get(opt, opt)})",
                      f"${usd:,.3f}" if usd is not None else "n/a (no such price for this GPU)",
                      None)
        return out

    def tables(self, res: ServingResults) -> list[dict]:
        """The planner's best candidates (serve's ``candidates``) when it chose, then what the
        figures rest on: why this concurrency, what TTFT and TPOT are calibrated against, the
        engine's settings."""
        out = []
        rows = [[f"TP {c['tp']}, EP {c['ep']}", f"{c['concurrency']:,}", f"{c['ttft_ms']:,.1f}",
                 f"{c['tpot_ms']:,.1f}", f"{c['output_tokens_per_s_per_gpu']:,.0f}"]
                for c in res.answer.get("candidates", [])]
        if rows:
            out.append({"title": "The planner's best layouts", "cls": "llmc-serving-table",
                        "columns": ["layout", "in flight", "TTFT [ms]", "TPOT [ms]",
                                    "tokens/s per GPU"], "rows": rows})
        out.append({"title": "What these figures rest on", "cls": "llmc-serving-basis",
                    "columns": ["", ""], "rows": basis_rows(res.answer)})
        return out

    def _pareto(self, res: ServingResults):
        return plots.serving_pareto({**res.answer, "pareto": res.pareto})

    def _memory(self, res: ServingResults):
        return plots.serving_memory(res.answer, res.memory_gb)

    def _cost(self, res: ServingResults):
        return plots.serving_cost(res.answer)


def basis_rows(a: dict) -> list[list[str]]:
    """serve's ``concurrency_reason``, ``calibration`` and ``engine_settings`` as the rows of
    the page's table (label, text)."""
    es = a["engine_settings"]
    rows = [["Concurrency", a["concurrency_reason"]],
            ["TTFT and TPOT calibrated against", a["calibration"]]]
    for key in ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization"):
        item = es[key]
        x = item["value"]
        text = ("none" if x is None else f"{x:g}" if isinstance(x, float) else f"{x:,}")
        text += (" (given)" if item["set_by"] == "query" else f" ({item['rule']})")
        if "share_of" in item:
            text += f"; a share of {item['share_of']}"
        name = item["engine_key"] + (f" ({key}=)" if item["engine_key"] != key else "")
        rows.append([f"{es['engine']} {es['version']} {name}", text])
    rows.append([f"{es['engine']} {es['version']} defaults followed", es["follows"]])
    return rows

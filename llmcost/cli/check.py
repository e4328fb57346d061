"""``llmcost check``: is the cluster delivering, from its own outputs against the model."""

from __future__ import annotations

import argparse

from .. import _validate as v
from .. import catalog
from ..checks.nccl_tests import OPS as CHECK_OPS
from .common import _flag, _hardware
from .output import _fmt
from .scenarios import _scenarios_from_args


def cmd_check(a) -> dict:
    """Is the cluster delivering: nccl-tests output, a training log and/or DCGM samples read
    and checked against the model. The hardware from --gpu/--fabric or the query, the
    placement from the output or --nodes/--gpus-per-node/--nics-per-node; a log's model
    from model= (or --model), --model-config or the log itself, else its measured figures
    alone."""
    from ..checks import check as chk
    from ..checks import text as ctext
    if a.nccl_tests is None and a.train_log is None and a.dcgm is None:
        raise v.InputError("nccl_tests", "give --nccl-tests FILE, --train-log FILE and/or "
                                         "--dcgm FILE")
    for dest in ("nodes", "gpus_per_node", "nics_per_node"):
        if getattr(a, dest) is not None:
            v.integer(_flag(dest), getattr(a, dest), 1, 1_000_000)
    texts = {k: (path, ctext.read_file(path, k)) if path is not None else None
             for k, path in (("nccl_tests", a.nccl_tests), ("train_log", a.train_log),
                             ("dcgm", a.dcgm))}
    scenario = None
    notes = []
    query = a.query
    if a.model is not None:
        if query is not None and "model" in chk.typed_keys(query):
            raise v.InputError("model", "--model and model= in --query: give one")
        query = (query + "&" if query else "") + "model=" + a.model
    model_given = a.model is not None or a.model_config is not None or (
        query is not None and "model" in chk.typed_keys(query))
    if query is not None or a.model_config is not None:
        scenarios, _, notes = _scenarios_from_args(argparse.Namespace(
            query=query if query is not None else "", scenario=None,
            model_config=a.model_config))
        scenario = scenarios[0]
        if len(scenarios) > 1:
            notes.append("check reads scenario A of a compare link")
    hardware = None
    if a.nccl_tests is not None and a.gpu is not None:
        hardware = _hardware(a)
    elif a.nccl_tests is not None and query is None:
        raise v.InputError("gpu", "--nccl-tests needs the hardware: --gpu [--fabric], or "
                                  "--query \"gpu=..&fabric=..\"")
    res = chk.check_texts(chk.Pasted(texts["nccl_tests"], texts["train_log"], texts["dcgm"],
                                     a.nccl_op),
                          scenario=scenario, query=query, model_given=model_given,
                          hardware=hardware,
                          placement=chk.Placement(a.nodes, a.gpus_per_node, a.nics_per_node),
                          cat=catalog.default())
    res["warnings"] = notes
    return res


def _check_text(r: dict) -> str:
    """The check for a terminal: findings first, then the figures."""
    lines = ["findings:" + ("" if r["findings"] else " none")]
    lines += [f"  [{f['level']}] {f['what']}: {f['evidence']}" for f in r["findings"]]
    if r["collectives"]:
        lines.append("collectives (busbw measured / expected, GB/s):")
        for c in r["collectives"]:
            e = c["expected_busbw_gb_per_s"]
            lines.append(f"  {c['op']:<14} {c['size_bytes']:>14,} B  {_fmt(c['busbw_gb_per_s'])}"
                         f" / {_fmt(e) if e is not None else '-'}")
    if r["steps"]:
        lines.append("steps:")
        lines += [f"  {k}: " + (", ".join(_fmt(e) for e in x) if isinstance(x, list) else _fmt(x))
                  for k, x in r["steps"].items()]
    if r.get("dcgm"):
        lines.append("dcgm (mean, min, max; blanks):")
        lines += [f"  {k}: " + ", ".join("-" if x[q] is None else _fmt(x[q])
                                         for q in ("mean", "min", "max")) + f"; {x['blank']}"
                  for k, x in r["dcgm"]["metrics"].items()]
    lines += [f"note: {n}" for n in r["notes"] + r["assumptions"] + r["warnings"]]
    return "\n".join(lines)


def _args_check(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost check``."""
    sp.add_argument("--nccl-tests", metavar="FILE",
                    help="nccl-tests output (text of any *_perf, or its -J JSON)")
    sp.add_argument("--nccl-op", choices=CHECK_OPS,
                    help="the collective of --nccl-tests when the output does not name it "
                         "(default: from the output, the file name, or busbw/algbw)")
    sp.add_argument("--train-log", metavar="FILE",
                    help="a Megatron-LM/Megatron-Bridge, NeMo 2 or torchtitan training log")
    sp.add_argument("--dcgm", metavar="FILE",
                    help="dcgm-exporter's /metrics text (Prometheus) or 'dcgmi dmon -e ...' "
                         "output: profiling gauges, blanks")
    sp.add_argument("--gpu", help="catalog id of the nccl-tests GPUs (or give --query)")
    sp.add_argument("--fabric", help="scale-out fabric id of the nccl-tests run (default: "
                                     "the GPU's usual)")
    sp.add_argument("--query", help='the run, as the apps\' query string, e.g. '
                                    '"model=llama3-8b&gpu=h100-sxm&gpus=8&seq_len=8192"')
    sp.add_argument("--model", help="catalog id of the log's model (as model= in --query); "
                                    "without it, --model-config or a model the log prints, "
                                    "the log's measured figures alone are reported")
    sp.add_argument("--model-config", metavar="FILE",
                    help="a Hugging Face config.json: the log's model")
    sp.add_argument("--nodes", type=int, help="nodes of the nccl-tests run where its output "
                                              "has no Rank lines with hosts")
    sp.add_argument("--gpus-per-node", type=int, help="GPUs (ranks) per node of the "
                                                      "nccl-tests run")
    sp.add_argument("--nics-per-node", type=int, help="scale-out NICs per node (default: "
                                                      "NCCL_IB_HCA or NCCL's NET/IB line in "
                                                      "the output, else one per GPU)")

"""The review's covering points: the scenarios ``make test`` runs through the whole chain in
place of the whole-catalog grids (those run in ``make test-grid``).

Fourteen points in which every model family of the catalog, every GPU generation, every
training stack (and none named, ``auto``) and both sizing modes appear at least once; the
precisions a generation runs and both checkpoint modes and
price sources alternate. :func:`coverage` is what ``test_points_cover_the_catalog`` checks, so
a family or generation added to the catalog without a point fails there.
"""

import itertools

from llmcost import catalog
from llmcost.scenario import FIELDS, Scenario

CAT = catalog.default()

#: model id prefix -> family (the catalog has no family column; ids name the family)
FAMILIES = {"gpt3-": "GPT-3", "llama2-": "Llama 2", "llama3-": "Llama 3", "llama4-": "Llama 4",
            "mistral-": "Mistral", "mixtral-": "Mixtral", "qwen2.5-": "Qwen2.5",
            "qwen3-": "Qwen3", "megatron-gpt-": "Megatron GPT", "deepseek-": "DeepSeek",
            "gpt-oss-": "gpt-oss", "mpt-": "MPT (llm-foundry)"}

STACKS = FIELDS["stack"].metadata["options"]
SIZING = FIELDS["sizing"].metadata["options"]


def family(model_id: str) -> str:
    for prefix, name in FAMILIES.items():
        if model_id.startswith(prefix):
            return name
    raise KeyError(f"model {model_id!r} has no family in tests/points.py FAMILIES")


def _p(model, gpu, stack, sizing, tokens, precision="bf16", gpus=512, days=60.0, **extra):
    return Scenario(model=model, gpu=gpu, stack=stack, sizing=sizing, tokens=tokens,
                    precision=precision, gpus=gpus, target_days=days, **extra)


#: (generation, stack, sizing): megatron and fsdp each with both sizing modes on most
#: generations; deepspeed, nanotron and auto once each
POINTS = [
    _p("gpt3-175b", "a100-80gb", "megatron", "gpus", 3e11, gpus=1024, checkpoint_mode="sync"),
    _p("llama2-7b", "a100-40gb", "fsdp", "days", 2e12, days=30, price_source="custom"),
    _p("llama3-405b", "h100-sxm", "auto", "gpus", 15.6e12, gpus=16384,
       fabric="roce-400-tuned"),
    _p("llama3-8b", "h200", "fsdp", "days", 15e12, precision="fp8", days=30),
    _p("deepseek-v3", "h800", "megatron", "days", 14.8e12, precision="fp8", days=60,
       checkpoint_mode="sync"),
    _p("mistral-7b", "h100-pcie", "fsdp", "gpus", 1e12, gpus=64, price_source="custom"),
    _p("qwen3-235b-a22b", "b200", "megatron", "days", 36e12, precision="mxfp8", days=90),
    _p("qwen2.5-72b", "gb200", "fsdp", "gpus", 18e12, gpus=1024, checkpoint_mode="sync"),
    _p("mixtral-8x7b", "mi300x", "megatron", "gpus", 2e12, gpus=256, precision="fp8"),
    _p("megatron-gpt-18.4b", "mi325x", "deepspeed", "days", 4e11, days=20,
       checkpoint_mode="sync"),
    _p("mpt-1b-bench", "l40s", "megatron", "days", 2e10, days=7, price_source="custom"),
    _p("llama2-13b", "l40s", "nanotron", "gpus", 2e11, gpus=128),
    _p("gpt-oss-120b", "b300", "megatron", "gpus", 4e12, gpus=2048, precision="fp8"),
    _p("llama4-scout", "gb300", "fsdp", "days", 4e13, days=60, precision="mxfp8"),
]


def coverage(points=POINTS) -> dict:
    """What the points leave out: families, generations, stacks, sizing modes, and pairs of
    (generation, sizing mode)."""
    gen = {s: CAT.gpu(s.gpu).generation for s in points}
    generations = set(CAT.gpus()["generation"])
    pairs = {(g, z) for g in generations for z in SIZING}
    return {"families": set(FAMILIES.values()) - {family(s.model) for s in points},
            "unfamilied": {m for m in CAT.ids("models") if not _has_family(m)},
            "generations": generations - set(gen.values()),
            "stacks": set(STACKS) - {s.stack for s in points},
            "sizing": set(SIZING) - {s.sizing for s in points},
            "pairs": pairs - {(gen[s], s.sizing) for s in points}}


def _has_family(model_id: str) -> bool:
    try:
        family(model_id)
    except KeyError:
        return False
    return True


#: every catalog model but the llm-foundry benchmark configurations (mpt-*-bench, calibration
#: rows of the fsdp stack), of which the 7B stands for the rest
MODELS = [m for m in CAT.ids("models") if not m.endswith("-bench") or m == "mpt-7b-bench"]
GPUS = CAT.ids("gpus")


def grid():
    """Every catalog model x GPU x sizing mode (``make test-grid`` and
    benchmarks/identity.py), with the precision, fabric, checkpoint mode, price source and
    tokens alternating so that every pair of levels meets."""
    for i, (model, gpu) in enumerate(itertools.product(MODELS, GPUS)):
        for sizing in ("gpus", "days"):
            g = CAT.gpu(gpu)
            # every precision the GPU supports appears (FP8 where it has FP8 tensor cores,
            # MXFP8 on Blackwell), BF16 most often
            precision = ("bf16", "fp8", "mxfp8")[i % 3]
            if precision == "mxfp8" and g.generation != "blackwell":
                precision = "fp8"
            if precision == "fp8" and g.fp8_dense_tflops is None:
                precision = "bf16"
            # "auto": the fabric the GPU's systems ship with (the default), or named
            yield Scenario(model=model, gpu=gpu, fabric=("auto", g.usual_scale_out)[i % 2],
                           sizing=sizing, gpus=512, target_days=30, precision=precision,
                           checkpoint_mode=("sync", "async")[(i + (sizing == "days")) % 2],
                           price_source=("catalog", "custom")[(i // 2) % 2],
                           tokens=2e12 if i % 3 else 3e11)

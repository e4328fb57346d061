"""``llmcost serve``: serving figures of a layout, or the best layout under limits."""

from __future__ import annotations

import argparse

from ..serving import query as serve_query


def cmd_serve(a) -> dict:
    """Serving figures of a layout (llmcost.serving), or the planner's best under limits."""
    return serve_query.answer(a.query, a.model_config)


def _args_serve(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost serve``."""
    sp.add_argument("--query", required=True,
                    help='e.g. "model=llama3-70b&gpu=h100-sxm&tp=4&weights=fp8&isl=1000&'
                         'osl=1000&concurrency=64&engine=vllm"; keys: '
                         + ", ".join(serve_query.KEYS) + "; ttft_ms_max/tpot_ms_max without "
                         "tp: the best layout under them; max_num_seqs, max_num_batched_tokens "
                         "and gpu_memory_utilization set the engine's scheduler (vLLM's names "
                         "for every engine; the answer's engine_settings says which setting "
                         "each is); serve_tp/serve_ep: the Serving app's tp/ep")
    sp.add_argument("--model-config", metavar="FILE",
                    help="a Hugging Face config.json: serve that model (model=config)")

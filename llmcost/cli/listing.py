"""``llmcost list``: a catalog table."""

from __future__ import annotations

import argparse
import json

from .. import catalog

#: columns `llmcost list <table>` prints as text (JSON keeps all of them)
LIST_TEXT_COLUMNS = {
    "models": ("id", "name", "layers", "hidden", "heads", "kv_heads", "vocab", "seq_len",
               "published_params_b", "moe_experts", "moe_top_k", "published_active_params_b",
               "as_of"),
    "gpus": ("id", "name", "generation", "bf16_dense_tflops", "fp8_dense_tflops", "memory_gib",
             "hbm_bandwidth_tb_per_s", "scale_up", "scale_up_domain_gpus", "gpus_per_node", "as_of"),
    "fabrics": ("id", "name", "kind", "bandwidth_gb_per_s_per_gpu", "latency_us", "efficiency",
                "congestion_per_doubling", "as_of"),
}


def cmd_list(a) -> dict:
    df = catalog.default().table(a.table)
    cols = [c for c in df.columns if c not in ("notes",)]
    return {"table": a.table, "rows": json.loads(df[cols].to_json(orient="records"))}


def _args_list(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost list``."""
    sp.add_argument("table", choices=catalog.TABLES)

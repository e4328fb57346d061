"""Add the PyTorch FSDP rows to data/calibration_runs.csv (run by hand, not by tests).

Run: .venv/bin/python benchmarks/extract_fsdp_runs.py <git-dir of mosaicml/llm-foundry> \
         [<git-dir of pytorch/torchtitan>]

The llm-foundry rows are parsed from ``scripts/train/benchmarking/README.md`` at that
repository's HEAD: every row of its five tables (H100 80GB BF16 at >= 128 GPUs, H100 80GB BF16,
H100 80GB FP8, A100 80GB and A100 40GB), MPT models of the benchmark configuration
(``mpt-<size>-bench`` in data/models.csv), each with the date of the commit that added its line.
They calibrate the step model's ``stack="fsdp"`` constants (benchmarks/validate.py ``--fit``).
The torchtitan rows (``benchmarks/llama3_h100_202412_torchtitan.md``, Tables 1 and 3: FSDP
alone, eager, BF16) are kept out of every fit: they check the fsdp constants out of sample.

Existing rows of these sources are replaced; every other row is left as it is, byte for byte
(benchmarks/extract_megatron_bridge.py rebuilds the file from its own sources only: run this
script after it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "calibration_runs.csv"
README = "scripts/train/benchmarking/README.md"
TITAN = "benchmarks/llama3_h100_202412_torchtitan.md"

#: README section title -> (source_table, catalog GPU id, system as the section prints it)
SECTIONS = {
    "H100 80GB BF16 (Large Scale, >= 128 GPUs)": "llm-foundry h100 bf16 large scale",
    "H100 80GB BF16": "llm-foundry h100 bf16",
    "H100 80GB FP8": "llm-foundry h100 fp8",
    "A100 80GB with 1600 Gbps node-node interconnect (RoCE)": "llm-foundry a100-80gb bf16",
    "A100 40GB with 1600 Gbps node-node interconnect (RoCE)": "llm-foundry a100-40gb bf16",
}
GPUS = {"h100_80gb": "h100-sxm", "a100_80gb": "a100-80gb", "a100_40gb": "a100-40gb"}
PRECISIONS = {"amp_bf16": "bf16", "bf16": "bf16", "amp_fp8": "fp8"}


def _git(gitdir, *args) -> str:
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], check=True,
                          capture_output=True, text=True).stdout


def _added(gitdir, path, line) -> tuple[str, str]:
    """(short commit, YYYY-MM) of the oldest commit whose diff adds this exact line."""
    log = _git(gitdir, "log", "--format=%h %ad", "--date=short", "-S", line, "--", path)
    commit, date = log.strip().splitlines()[-1].split()
    return commit, date[:7]


def llm_foundry_rows(gitdir) -> list[dict]:
    head = _git(gitdir, "rev-parse", "HEAD").strip()
    text = _git(gitdir, "show", f"HEAD:{README}")
    out, section, header = [], None, None
    for line in text.splitlines():
        if line.startswith("## "):
            section = SECTIONS.get(line[3:].strip())
            title = line[3:].strip()
            header = None
            continue
        if section is None or not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "Model":
            header = cells
            continue
        if header is None or cells[0] == "---":
            continue
        r = dict(zip(header, cells))
        gpus, mb, ga = int(r["# GPUs"]), int(r["MicroBatchSize"]), int(r["GradAccum"])
        B, s = int(r["GlobalBatchSize"]), int(r["SeqLen (T)"])
        tps = int(r["Throughput (T/s/GPU)"])
        full = r["Sharding Strategy"] == "FULL_SHARD"
        ac = r["Activation Checkpointing"]
        commit, as_of = _added(gitdir, README, line.strip())
        uneven = "" if mb * ga * gpus == B else (
            f"; micro-batch x accumulation x GPUs = {mb * ga * gpus} != global batch {B}: "
            "the source's micro-batching engine runs unequal micro-batches")
        out.append(dict(
            id=(f"lf-{r['GPU'].replace('_', '')}-{r['Precision']}-mpt-{r['Model']}-s{s}-g{gpus}"
                f"-mb{mb}"),
            source_table=section, task="pretrain", model=f"mpt-{r['Model']}-bench",
            model_printed=r["Model"], model_kind="dense", gpu=GPUS[r["GPU"]],
            system_printed=f"MosaicML platform; table '{title}'", gpus=gpus,
            precision=PRECISIONS[r["Precision"]],
            precision_printed=f"{r['Precision']} (MP Mode {r['MP Mode']})",
            fsdp=gpus if full else None, tp=1, pp=1, cp=1, ga=ga, seq_len=s, global_batch=B,
            micro_batch=mb, tokens_per_s_per_gpu=tps,
            model_tflops_per_gpu=float(r["Model TFLOP"]),
            step_time_s=float(f"{B * s / (tps * gpus):.6g}"),
            notes=(f"PyTorch FSDP (Composer), flash attention (attn_impl flash); Sharding "
                   f"Strategy {r['Sharding Strategy']}; Activation Checkpointing {ac}; Activation "
                   f"CPUOffload {r['Activation CPUOffload']}; MP Mode {r['MP Mode']}; MFU "
                   f"{r['MFU']}%, HFU {r['HFU']}% of the dense peak of the row's precision (the "
                   "source's count: 6 N + 12 l s h per token, N with embeddings); NumParams "
                   f"{r['NumParams']} (learned positions grow with the sequence); "
                   "tokens_per_s_per_gpu = Throughput (T/s/GPU) as printed; step_time_s = B s / "
                   f"(tokens_per_s_per_gpu x gpus); line added in {commit}{uneven}"),
            source=(f"MosaicML llm-foundry, {README}, section '{title}' "
                    f"(mosaicml/llm-foundry@{head})"),
            as_of=as_of))
    return out


def torchtitan_rows(gitdir) -> list[dict]:
    head = _git(gitdir, "rev-parse", "HEAD").strip()
    text = _git(gitdir, "show", f"HEAD:{TITAN}")
    out = []
    # Tables 1 and 3: "1D Parallelism (FSDP). Llama 3.1 8B model. N GPUs. Local batch size 2,
    # global batch size B. Selective activation checkpointing." The plain "FSDP" line is eager
    # BF16 (the others add torch.compile and Float8).
    for table, gpus, B in ((1, 8, 16), (3, 128, 256)):
        block = text.split(f"**Table {table}**")[1].split("**Table")[0]
        assert f"{gpus} GPUs. Local batch size 2, global batch size {B}." in block, table
        tps = float(re.search(r"^\| FSDP \| ([\d,]+) \|", block, re.M).group(1).replace(",", ""))
        s = 8192
        out.append(dict(
            id=f"tt-2024-12-llama3-8b-fsdp-g{gpus}", source_table="torchtitan h100 2024-12",
            task="pretrain", model="llama3-8b", model_printed="Llama 3.1 8B", model_kind="dense",
            gpu="h100-sxm",
            system_printed=("Grand Teton, H100 96GB HBM2e 2.4 TB/s at 500 W, 400 Gb/s RDMA per "
                            "GPU"),
            gpus=gpus, precision="bf16", precision_printed="BF16 (no Float8)", fsdp=gpus, tp=1,
            pp=1, cp=1, ga=1, seq_len=s, global_batch=B, micro_batch=2,
            tokens_per_s_per_gpu=tps, step_time_s=float(f"{B * s / (tps * gpus):.6g}"),
            notes=(f"Table {table}, row FSDP (FSDP2, eager: no torch.compile, no Float8); "
                   "selective activation checkpointing (torchtitan's per-op policy: saves the "
                   "attention and every other matmul output); seq_len 8192 from "
                   "train_configs/llama3_8b.toml at torchtitan 9dec370 (the commit the page "
                   "names); the GPUs are 500 W H100 with HBM2e (the page: peak between SXM and "
                   "NVL), predicted here as h100-sxm; out-of-sample check of the fsdp constants, "
                   "never fitted"),
            source=f"pytorch/torchtitan, {TITAN} (pytorch/torchtitan@{head})", as_of="2024-12"))
    return out


def main(foundry, titan=None):
    rows = llm_foundry_rows(foundry) + (torchtitan_rows(titan) if titan else [])
    old = pd.read_csv(DATA, dtype=str, keep_default_na=False)
    mine = {r["source_table"] for r in rows}
    keep = old[~old["source_table"].isin(mine)]
    new = pd.DataFrame(rows, columns=old.columns)
    for c in ("gpus", "fsdp", "tp", "pp", "cp", "ga", "seq_len", "global_batch", "micro_batch"):
        new[c] = new[c].astype("Int64")
    new = new.astype("string").fillna("")
    table = pd.concat([keep, new], ignore_index=True)
    if table["id"].duplicated().any():
        raise ValueError(f"duplicate ids: {table.loc[table['id'].duplicated(), 'id'].tolist()}")
    table.to_csv(DATA, index=False)
    print(f"{len(new)} rows of {sorted(mine)} written to {DATA.relative_to(ROOT)} "
          f"({len(table)} rows in all)")


if __name__ == "__main__":
    main(*sys.argv[1:3])

"""Rebuild data/calibration_runs.csv from its three sources (run by hand, not by tests).

Run: .venv/bin/python benchmarks/extract_megatron_bridge.py <git-dir of NVIDIA-NeMo/Megatron-Bridge>

The Megatron-Bridge rows are parsed from ``docs/performance-summary.md`` and
``docs/performance-summary-archive.md`` at that repository's HEAD, keeping only the sections
for releases 25.11 and newer (issue 9 item 5: the older sections are held out). The
Narayanan et al. 2021 Table 1 and Llama 3 Table 4 rows are copied from
data/published_runs.csv, with tokens/s and step time derived as each row's notes say.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llmcost import catalog  # noqa: E402
from llmcost.training.flops import megatron_flops_per_iteration  # noqa: E402

FILES = ("docs/performance-summary.md", "docs/performance-summary-archive.md")
MIN_RELEASE = (25, 11)
#: Megatron-Bridge model names that are catalog models (data/models.csv).
CATALOG_MODELS = {"LLAMA3_8B": "llama3-8b", "LLAMA3_70B": "llama3-70b",
                  "LLAMA3.1_405B": "llama3-405b"}
SYSTEMS = {"DGX-H100": "h100-sxm", "DGX-B200": "b200", "DGX-GB200": "gb200",
           "DGX-B300": "b300", "DGX-GB300": "gb300"}
PRECISIONS = {"BF16": "bf16", "FP8": "fp8", "FP8-CS": "fp8", "FP8-MX": "mxfp8",
              "MXFP8": "mxfp8", "NVFP4": "nvfp4"}
TASKS = {"Pre-Training Performance": "pretrain", "SFT Performance": "sft",
         "LoRA Performance": "lora"}
MB_NOTE = ("Model TFLOP/s as printed by Megatron-Bridge, which counts causal attention at "
           "half (not the tool's full-attention convention)")
MOE_NOTE = ("MoE: Megatron-Bridge force-balances the token distribution among experts, "
            "token-dropless (section footnote)")

COLUMNS = ["id", "source_table", "task", "model", "model_printed", "model_kind", "gpu",
           "system_printed", "gpus", "precision", "precision_printed", "fsdp", "tp", "pp", "cp",
           "ep", "vp", "etp", "ga", "seq_len", "global_batch", "micro_batch",
           "tokens_per_s_per_gpu", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
           "step_time_s", "notes", "source", "as_of"]


def git(gitdir, *args):
    return subprocess.run(["git", "-C", str(gitdir), *args], check=True, capture_output=True,
                          text=True).stdout


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _num(text):
    text = text.strip()
    return None if text.lower() in ("n/a", "") else int(text)


def _split_alt(text):
    """'37556 (36108)' -> ('37556', '36108'); '661[^note]' -> ('661', None, 'note')."""
    notes = re.findall(r"\[\^([^\]]+)\]", text)
    text = re.sub(r"\[\^[^\]]+\]", "", text).strip()
    m = re.fullmatch(r"(.+?)\s*\((.+)\)", text)
    return (m.group(1).strip(), m.group(2).strip(), notes) if m else (text, None, notes)


def parse_summary(text, path, commit, as_of):
    footnotes = dict(re.findall(r"^\[\^([^\]]+)\]:\s*(.+)$", text, flags=re.M))
    rows, release, task, heading = [], None, None, None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^## (\d+)\.(\d+)(\.\d+)? NeMo Container", line)
        if m:
            release = (int(m.group(1)), int(m.group(2)))
            release_name = line[3:].split(" NeMo")[0]
        elif line.startswith("## "):
            release = None
        elif line.startswith("### "):
            task = TASKS.get(line[4:].strip())
        elif line.startswith("#### "):
            heading = line[5:].strip()
        elif line.startswith("|") and release and release >= MIN_RELEASE and task:
            header = _cells(line)
            table = []
            i += 2                                   # skip the |---| rule
            while i < len(lines) and lines[i].startswith("|"):
                table.append(dict(zip(header, _cells(lines[i]))))
                i += 1
            after = []
            while i < len(lines) and not lines[i].startswith("#"):
                if lines[i].startswith("- "):
                    after.append(lines[i][2:].strip())
                i += 1
            rows += _rows(table, heading, release_name, task, after, footnotes, path, commit,
                          as_of)
            continue
        i += 1
    return rows


def _rows(table, heading, release_name, task, after, footnotes, path, commit, as_of):
    out = []
    for cells in table:
        model_printed = cells.get("Model") or heading.split(":", 1)[1].strip()
        system = cells.get("System") or heading.split(":", 1)[1].strip()
        base = model_printed.split(" (")[0].strip()
        prec_main, prec_alt, _ = _split_alt(cells["Precision"])
        tok_main, tok_alt, tok_notes = _split_alt(cells["Tokens / sec / GPU"])
        tf_main, tf_alt, tf_notes = _split_alt(cells["Model TFLOP / sec / GPU"])
        variants = [(prec_main, tok_main, tf_main)]
        if prec_alt is not None:
            variants.append((prec_alt, tok_alt, tf_alt))
        for prec, tok, tf in variants:
            ep = _num(cells["EP"])
            kind = "dense" if base in CATALOG_MODELS else "moe"
            if kind == "moe" and not (ep and ep > 1):
                raise ValueError(f"{model_printed}: MoE without EP > 1")
            gbs, seq = int(cells["GBS"]), int(cells["Sequence Length"])
            gpus, tps = int(cells["#-GPUs"]), float(tok)
            step = gbs * seq / (tps * gpus)
            notes = [MB_NOTE,
                     f"step_time_s derived: GBS x seq_len / (tokens_per_s_per_gpu x gpus) = "
                     f"{gbs} x {seq} / ({tok} x {gpus}) = {step:.4g} s"]
            if prec_alt is not None:
                notes.append(f"printed as '{cells['Precision']}' with the {prec_alt} figures in "
                             "parentheses: one row per precision (section note: parentheses "
                             "mark a different quantization granularity)")
            notes += [footnotes.get(n, n) for n in tok_notes + tf_notes]
            notes += [a for a in after if "MoE training benchmarks" not in a]
            if kind == "moe":
                notes.append(MOE_NOTE)
            out.append(dict(
                source_table=f"megatron-bridge {release_name}", task=task,
                model=CATALOG_MODELS.get(base, model_printed), model_printed=model_printed,
                model_kind=kind, gpu=SYSTEMS.get(system, system), system_printed=system,
                gpus=gpus, precision=PRECISIONS[prec], precision_printed=prec,
                fsdp=_num(cells["FSDP"]) if "FSDP" in cells else None,
                tp=_num(cells["TP"]), pp=_num(cells["PP"]), cp=_num(cells["CP"]), ep=ep,
                vp=_num(cells["VP"]), etp=None,
                ga=_num(cells["GA"]) if "GA" in cells else None, seq_len=seq,
                global_batch=gbs, micro_batch=int(cells["MBS"]),
                tokens_per_s_per_gpu=tps, model_tflops_per_gpu=float(tf),
                hardware_tflops_per_gpu=None, step_time_s=round(step, 6),
                notes="; ".join(notes),
                source=f"NVIDIA-NeMo/Megatron-Bridge@{commit}, {path}, section "
                       f"'{release_name} NeMo Container'",
                as_of=as_of))
    return out


def _slug(text):
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def megatron_bridge_rows(gitdir):
    commit = git(gitdir, "rev-parse", "HEAD").strip()
    as_of = git(gitdir, "log", "-1", "--format=%cs", "HEAD").strip()
    rows = []
    for path in FILES:
        rows += parse_summary(git(gitdir, "show", f"HEAD:{path}"), path, commit, as_of)
    seen = {}
    for r in rows:
        rid = "mb-{}-{}-{}-{}-{}".format(r["source_table"].split()[-1], r["task"],
                                         _slug(r["model_printed"]), r["gpu"], r["precision"])
        if rid in seen:                      # two printed rows differ in their layout
            rid += f"-gbs{r['global_batch']}"
        seen[rid] = True
        r["id"] = rid
    return rows


def published_rows():
    """Table 1 and Llama 3 Table 4 rows from data/published_runs.csv, with derivations."""
    cat = catalog.default()
    runs = cat.published_runs()
    out = []
    for _, r in runs[runs["id"].str.startswith("megatron-")].iterrows():
        m = cat.model(r["model"])
        B, s, n, tf = int(r["global_batch"]), int(r["seq_len"]), int(r["gpus"]), \
            float(r["achieved_tflops_per_gpu"])
        per_token = float(megatron_flops_per_iteration(1, s, m.layers, m.hidden, m.vocab,
                                                       "full")) / s
        tps = tf * 1e12 / per_token
        step = B * s / (tps * n)
        out.append(dict(
            id=f"t1-{r['id']}", source_table="narayanan2021 table 1", task="pretrain",
            model=r["model"], model_printed=m.name, model_kind="dense", gpu=r["gpu"],
            system_printed="DGX A100 80GB", gpus=n, precision="bf16",
            precision_printed="mixed precision (fp16)", tp=int(r["tp"]), pp=int(r["pp"]),
            cp=1, seq_len=s, global_batch=B, tokens_per_s_per_gpu=round(tps, 3),
            hardware_tflops_per_gpu=tf, step_time_s=round(step, 4),
            notes=(f"{r['notes']}; copy of published_runs.csv row {r['id']}; Table 1 prints "
                   "achieved TFLOP/s counted with Eq. 3 (full recompute, attention over the full "
                   "s x s matrix); tokens_per_s_per_gpu derived: TFLOP/s x 1e12 / (Eq. 3 per "
                   f"token = 96 l h^2 (1 + s/(6h) + V/(16 l h)) = {per_token:.5g} FLOP) = "
                   f"{tps:.1f}; step_time_s = B s / (tokens_per_s_per_gpu x gpus); micro-batch "
                   "and interleave not printed; the paper trains in fp16 mixed precision, "
                   "run here at the bf16 peak (same A100 tensor-core rate)"),
            source=r["source"], as_of=r["as_of"]))
    for _, r in runs[runs["id"].str.startswith("llama3-405b")].iterrows():
        m = cat.model(r["model"])
        s, n, tf = int(r["seq_len"]), int(r["gpus"]), float(r["achieved_tflops_per_gpu"])
        B = 2**24 // s
        per_token = float(m.flops_per_token("none", seq_len=s))
        tps = tf * 1e12 / per_token
        step = B * s / (tps * n)
        out.append(dict(
            id=f"l3-{r['id']}", source_table="llama3 table 4", task="pretrain",
            model=r["model"], model_printed="Llama 3 405B", model_kind="dense", gpu=r["gpu"],
            system_printed="H100 80GB (Grand Teton, RoCE)", gpus=n, precision="bf16",
            precision_printed="BF16", tp=int(r["tp"]), pp=int(r["pp"]), cp=int(r["cp"]),
            seq_len=s, global_batch=B, model_tflops_per_gpu=tf,
            tokens_per_s_per_gpu=round(tps, 3), step_time_s=round(step, 3),
            notes=(f"{r['notes']}; copy of published_runs.csv row {r['id']}; global_batch "
                   f"derived: Tokens/Batch '16M' read as 2^24 tokens / seq_len {s} = {B} "
                   "(assumption: 16M = 2^24); tokens_per_s_per_gpu derived: TFLOP/s x 1e12 / "
                   f"model FLOPs per token {per_token:.5g} (llmcost.training.flops."
                   "flops_per_token, recompute none, full s x s attention; assumption: Meta's "
                   "TFLOP/s use that convention, the paper does not state it; with causal "
                   "attention halved the derived tokens/s would be higher); step_time_s = B s / "
                   "(tokens_per_s_per_gpu x gpus); micro-batch not printed"),
            source=r["source"], as_of=r["as_of"]))
    return out


def main(gitdir):
    df = pd.DataFrame(published_rows() + megatron_bridge_rows(gitdir), columns=COLUMNS)
    if df["id"].duplicated().any():
        raise ValueError(f"duplicate ids: {df.loc[df['id'].duplicated(), 'id'].tolist()}")
    ints = ["gpus", "fsdp", "tp", "pp", "cp", "ep", "vp", "etp", "ga", "seq_len",
            "global_batch", "micro_batch"]
    for c in ints:
        df[c] = df[c].astype("Int64")
    df.to_csv(ROOT / "data" / "calibration_runs.csv", index=False)
    print(f"{len(df)} rows written to data/calibration_runs.csv")


if __name__ == "__main__":
    main(sys.argv[1])

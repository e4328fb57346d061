"""predict_step's inputs checked and resolved once (layout, options, constants, memory), for
the compute and communication terms to share.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ... import _validate as v
from .. import stacks as stacks_mod
from ..memory import (
    MemoryBreakdown,
    MemoryOptions,
    _stage_layers,
    check_expert_layout,
    check_layout,
    memory_per_gpu,
)
from ..precision import FP8_SCALINGS, check_precision
from ..recompute import check_recompute_modules
from .calibration import CUDA_GRAPH_MODES, STACKS, Calibration, Options, calibration_for

if TYPE_CHECKING:
    from ..arch import ModelSpec
    from ..hardware import Hardware
    from ..layout import Layout


def _check(model: ModelSpec, layout: Layout, seq_len: int) -> tuple[np.ndarray, ...]:
    gpus, tp, pp, cp, vv = check_layout(model, layout, seq_len)
    if layout.global_batch is None:
        raise v.InputError("global_batch", "predict_step needs the layout's global_batch "
                                           "[sequences], got None")
    b = np.asarray(layout.micro_batch)
    B = np.asarray(layout.global_batch)
    # tokens per step (B s, and b s below it) are int64 products: bound them where they are
    # exact, instead of letting them wrap around to negative
    step_tokens = B.astype(float) * seq_len
    if np.any(step_tokens > v.MAX_INTEGER):
        raise v.InputError("global_batch", "global_batch x seq_len must be at most 2**53 "
                                           f"tokens, got {float(np.max(step_tokens)):.3g}")
    dp = gpus // (tp * pp * cp)
    v.multiple_of("global_batch", B, "micro_batch x dp", b * dp)
    m = B // (b * dp)
    inter_bad = np.broadcast_to((vv > 1) & (m % pp != 0), np.broadcast(vv, m, pp).shape)
    if inter_bad.any():
        raise v.InputError("interleave", "the interleaved schedule needs micro-batches per "
                                         "pipeline (global_batch / (micro_batch x dp)) to be a "
                                         "multiple of pp")
    return gpus, tp, pp, cp, b, B, vv, dp, m


class _Resolved(NamedTuple):
    # predict_step's inputs checked and resolved (layout, options, constants, memory); the
    # short names are the equations' symbols the compute and communication terms read
    s: int
    gpus: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    b: np.ndarray
    global_batch: np.ndarray
    interleave: np.ndarray
    dp: np.ndarray
    num_microbatches: np.ndarray
    n_first: np.ndarray
    n_mid: np.ndarray
    n_last: np.ndarray
    rec: np.ndarray
    rec_attn: np.ndarray
    recompute_modules: tuple
    sp: np.ndarray
    zero_stage: np.ndarray
    opt: Options
    cal: Calibration
    flash: np.ndarray
    tp_comm_overlap: np.ndarray
    prec: np.ndarray
    fp8: bool
    imb: float
    graphs: str
    memory: MemoryBreakdown
    ep: np.ndarray
    etp: np.ndarray
    edp: np.ndarray
    peak: float
    hbm: float
    node: int
    #: the layout with its per-layout choices resolved against the options
    layout: Layout
    memory_options: MemoryOptions


def _check_options(opt: Options) -> None:
    # shares outside [0, 1] give negative exposed times and an MFU above 1
    for share in ("dp_overlap", "tp_overlap", "tp_overlap_gemm_penalty"):
        v.in_range(share, getattr(opt, share), 0, 1)
    v.positive("grad_bytes", opt.grad_bytes)


def _resolve(model: ModelSpec, hardware: Hardware, layout: Layout, options: Options,
             calibration: Calibration | None, memory: MemoryOptions | None,
             seq_len: int | None) -> _Resolved:
    # the checks run in this order so that the first bad input is the one named
    gpu, L, opt = hardware.gpu, layout, options
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    gpus, tp, pp, cp, b, B, vv, dp, m = _check(model, L, s)
    n_first, n_mid, n_last, _, _ = _stage_layers(
        model.layers, pp,
        None if L.first_stage_layers is None else np.asarray(L.first_stage_layers),
        None if L.last_stage_layers is None else np.asarray(L.last_stage_layers))
    rec = np.asarray(L.recompute)
    mods = check_recompute_modules(L.recompute_modules, model.attention, model.is_moe,
                                   model.moe_shared_ffn_hidden > 0)
    # the attention core recomputed by name is selective recomputation
    rec_attn = np.where((rec == "none") & ("core_attn" in mods), "selective", rec)
    sp = np.asarray(L.sequence_parallel)
    zero = np.asarray(L.zero_stage)
    stack = v.choice("stack", opt.stack, STACKS)
    cal = calibration_for(gpu, stack) if calibration is None else calibration
    _check_options(opt)
    flash = v.boolean("flash_attention",
                      opt.flash_attention if L.flash_attention is None else L.flash_attention)
    tpo = v.boolean("tp_comm_overlap",
                    opt.tp_comm_overlap if L.tp_comm_overlap is None else L.tp_comm_overlap)
    # without Transformer Engine's userbuffers (PyTorch's, DeepSpeed's and nanotron's tensor
    # parallelism) the collectives run in the critical path: never hidden
    tpo = tpo & (tp > 1) & stacks_mod.stack(stack).tp_comm_overlap
    prec = check_precision(opt.precision if L.precision is None else L.precision, gpu)
    v.choice("fp8_scaling", opt.fp8_scaling, FP8_SCALINGS)
    imb = v.in_range("moe_load_imbalance", opt.moe_load_imbalance, 1.0, 16.0)
    v.in_range("moe_a2a_overlap", opt.moe_a2a_overlap, 0, 1)
    graphs = v.choice("cuda_graphs", opt.cuda_graphs, CUDA_GRAPH_MODES)
    mo = MemoryOptions() if memory is None else memory
    if model.is_moe and mo.moe_capacity_factor is None:
        mo = replace(mo, moe_capacity_factor=imb)
    resolved = replace(L, flash_attention=flash, tp_comm_overlap=tpo, precision=prec)
    mem = memory_per_gpu(model, resolved, mo, seq_len=s, generation=gpu.generation, stack=stack)
    ep, etp, edp = check_expert_layout(model, gpus, tp, pp, cp, L.ep, L.etp)
    # attention, logits and memory-bound work run at the BF16 peak for every precision,
    # and MFU/HFU are stated against it (one convention for all precisions). NVLink
    # reaches the scale-up domain (72 GPUs in an NVL72 rack), not the billing or failure
    # unit (a 4-GPU GB200 tray).
    return _Resolved(s, gpus, tp, pp, cp, b, B, vv, dp, m, n_first, n_mid, n_last, rec,
                     rec_attn, mods, sp, zero, opt, cal, flash, tpo, prec,
                     # imb: the checked 0-d array of one float, used as the float field
                     bool(np.any(prec != "bf16")), imb, graphs, mem, ep, etp, edp,  # type: ignore[arg-type]
                     gpu.bf16_dense_tflops * 1e12, gpu.hbm_bandwidth_tb_per_s * 1e12,
                     gpu.scale_up_domain, resolved, mo)

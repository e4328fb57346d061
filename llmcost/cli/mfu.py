"""``llmcost mfu``: effective utilization of a measured run, with plausibility findings."""

from __future__ import annotations

import argparse

from .. import _validate as v
from .. import catalog
from .. import utilization as ut
from ..training.precision import PRECISIONS
from .common import _add_model_args, _has_model, _model_from_args


def cmd_mfu(a) -> dict:
    if a.flops_per_token is None:
        if not _has_model(a):
            raise v.InputError("flops_per_token", "give --flops-per-token or a model")
        m = _model_from_args(a)
        fpt = m.flops_per_token("none")
        seq = m.seq_len
    else:
        fpt = a.flops_per_token
        if a.seq_len is None:
            raise v.InputError("seq_len", "--seq-len is required")
        seq = a.seq_len
    gpu = None
    if a.peak_tflops is not None:
        peak = a.peak_tflops
        basis = "given"
        if a.gpu:
            gpu = catalog.gpu(a.gpu)
    elif a.gpu:
        gpu = catalog.gpu(a.gpu)
        # one MFU convention for every precision: the dense BF16 peak (an FP8 run's figure
        # against its FP8 peak is half of it on H100, and that peak equals the BF16 sparse one)
        peak = gpu.bf16_dense_tflops
        basis = "bf16 dense"
    else:
        raise v.InputError("peak_tflops", "give --peak-tflops or --gpu")
    u = ut.effective_utilization(fpt, a.global_batch, seq, a.steps, peak, a.gpus, a.wall_clock_s)
    tokens_per_s = a.global_batch * seq * a.steps / a.wall_clock_s
    verdict = ut.assess_utilization(float(u), a.published, peak, gpu, precision=a.precision)
    res = {
        "effective_utilization": float(u),
        "tokens_per_s": tokens_per_s,
        "achieved_tflops_per_gpu": float(ut.achieved_tflops_per_gpu(tokens_per_s, fpt, a.gpus)),
        "peak_tflops": peak, "peak_basis": basis, "precision": a.precision,
        "flops_per_token": fpt,
        "findings": verdict.to_dict()["findings"],
    }
    if a.published is not None:
        res["published"] = float(a.published)
        res["ratio_to_published"] = float(u) / float(a.published)
    return res


def _args_mfu(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost mfu``."""
    _add_model_args(sp)
    sp.add_argument("--flops-per-token", type=float, help="model FLOPs per token (or give a model)")
    sp.add_argument("--global-batch", type=float, required=True, help="sequences per step")
    sp.add_argument("--steps", type=float, required=True)
    sp.add_argument("--gpus", type=float, required=True)
    sp.add_argument("--peak-tflops", type=float, help="dense peak per GPU (or --gpu)")
    sp.add_argument("--gpu", help="catalog id; its dense peak is used")
    sp.add_argument("--precision", choices=PRECISIONS, default="bf16",
                    help="the run's GEMM precision (MFU is stated against the dense BF16 "
                         "peak for every precision)")
    sp.add_argument("--wall-clock-s", type=float, required=True)
    sp.add_argument("--published", type=float, help="a published figure to compare with (0-1)")

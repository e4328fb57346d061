"""Training precision: which GEMMs run in FP8, what that costs in traffic, what it saves in memory.

A "precision" here is the number format of the linear layers' GEMMs (QKV, attention output
projection, FFN up/gate and down). With ``"fp8"`` or ``"mxfp8"`` those GEMMs run at the
GPU's FP8 dense peak; attention itself (FlashAttention), norms, activations, the logits and
the optimizer stay in BF16/FP32, as Transformer Engine (TE) under Megatron-Core runs them.
FP8 is not free: every GEMM input is quantized on the fly (a memory-bound pass over BF16
data), the weights are quantized once per optimizer step into copies that stay resident,
and the linear layers save FP8 instead of BF16 inputs for the backward pass.

``"fp8"`` is per-tensor scaling (Megatron-Bridge's "FP8-CS", current scaling, by default;
delayed scaling on request); ``"mxfp8"`` is the OCP microscaling format (E4M3 values with
one E8M0 scale per 32 consecutive elements), which only Blackwell tensor cores execute.

Functions return bytes per GPU; callers turn traffic into time at HBM bandwidth (roofline).
Symbols: s sequence length, b micro-batch, c context-parallel size, T = b s / c tokens per
GPU, h hidden, f FFN inner size, a heads, d head size, d_q = a d, d_kv = a_kv d, t TP size.

References
----------
1. NVIDIA Transformer Engine documentation, "Low precision training": "Performance
   Considerations" (Handling transposes: tensor usages, Table 2; Memory usage; Fused
   layers), "FP8 Current Scaling" (quantization reads the tensor twice: amax, then cast;
   Hopper/Ada need a physical transpose, Blackwell does not), "MXFP8" (block size 32, E8M0
   scales; rowwise and columnwise quantizations differ and are both kept).
   https://github.com/NVIDIA/TransformerEngine, docs/features/low_precision_training/.
2. Open Compute Project, "OCP Microscaling Formats (MX) Specification", v1.0 (2023),
   §5: block size k = 32, shared scale E8M0 (8 bits).
3. V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
   Models", arXiv:2205.05198, §4.1 (per-layer activation bytes, 34 s b h + 5 a s^2 b).
4. P. Micikevicius et al., "FP8 Formats for Deep Learning", arXiv:2209.05433, §4
   (GEMM inputs in FP8, everything else in higher precision).
5. NVIDIA Megatron-Bridge, docs/performance-summary.md, releases 25.11+ (precision
   labels BF16, FP8-CS, FP8-MX/MXFP8 by GPU).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v
from .hardware import GPUSpec
from .layer_options import PRECISIONS, LayerOptions

if TYPE_CHECKING:
    from .arch import ModelSpec

#: per-tensor FP8 scaling recipes: "current" (amax of this tensor, an extra read; Megatron-
#: Bridge "FP8-CS") or "delayed" (amax history, fused into the cast).
FP8_SCALINGS = ("current", "delayed")
#: MXFP8 block size: one E8M0 (1-byte) scale per 32 elements ([2] §5; [1] "MXFP8").
MX_BLOCK = 32
#: bytes of one BF16 element.
BF16_BYTES = 2.0
#: llmcost states MFU/HFU against the dense peak of this precision for every run, so FP8
#: and BF16 runs compare on one scale (an FP8 run can exceed 60% of it; see
#: :func:`llmcost.utilization.assess_utilization`).
MFU_PEAK_PRECISION = "bf16"


def check_precision(precision: ArrayLike, gpu: GPUSpec) -> np.ndarray:
    r"""Validate GEMM precision names against what a GPU can execute.

    FP8 (per-tensor scaling) needs FP8 tensor cores (``gpu.fp8_dense_tflops`` set: Ada,
    Hopper, Blackwell, CDNA3); MXFP8 needs block-scaled FP8 tensor cores, which the
    Blackwell generation has and Hopper has not ([1] "MXFP8": SM 10.0/10.3 only).

    Parameters
    ----------
    precision : {"bf16", "fp8", "mxfp8"} or array of these names
        GEMM precision of each layout.
    gpu : GPUSpec
        The accelerator (its ``generation`` and ``fp8_dense_tflops``).

    Returns
    -------
    precision : numpy array of str
        The names [-], as a 0-d array for one name.

    Raises
    ------
    InputError
        Naming ``precision``, when a name is unknown or the GPU cannot run it.

    References
    ----------
    .. [1] Transformer Engine docs, "MXFP8", Supported devices (SM 10.0, SM 10.3);
       "FP8 Current Scaling", Supported devices (SM 8.9+).
    """
    prec = v.choices("precision", precision, PRECISIONS)
    if np.any(prec == "mxfp8") and gpu.generation != "blackwell":
        raise v.InputError("precision", f"precision 'mxfp8' needs block-scaled FP8 tensor cores "
                                        f"(Blackwell generation); {gpu.id} is {gpu.generation}: "
                                        "use 'fp8' or 'bf16'")
    if np.any(prec != "bf16") and gpu.fp8_dense_tflops is None:
        bad = str(prec[prec != "bf16"].flat[0] if prec.ndim else prec.item())
        raise v.InputError("precision", f"precision {bad!r} is not supported by {gpu.id} "
                                        f"(no FP8 tensor cores); use 'bf16'")
    return prec


class PrecisionPeaks(NamedTuple):
    """Dense peaks [TFLOP/s] for the two parts of a layer's work."""

    #: the linear layers' GEMMs (weights x activations)
    gemm_tflops: np.ndarray
    #: attention (QK^T, PV), the logits and everything memory-bound: BF16
    other_tflops: np.ndarray


def peak_tflops_by_part(gpu: GPUSpec, precision: ArrayLike = "bf16") -> PrecisionPeaks:
    r"""Dense peaks for the GEMM share and the rest of the work, by precision.

    .. math:: F_{gemm} = \begin{cases} F_{BF16} & \text{bf16} \\ F_{FP8} & \text{fp8, mxfp8}
              \end{cases}, \qquad F_{other} = F_{BF16}

    FP8 training quantizes only the inputs of the linear layers; attention, norms, softmax
    and activations stay in higher precision ([2] §4; TE's ``DotProductAttention`` runs in
    BF16 unless FP8 attention is asked for, which Megatron-Bridge's recipes do not). The
    LM head (Megatron-Core's output layer) stays BF16 too. MXFP8 runs at the FP8 dense
    rate: Blackwell applies the block scales inside the tensor-core instruction
    (assumption: the datasheet's FP8 figure covers MXFP8, as NVIDIA lists one FP8 rate).

    Parameters
    ----------
    gpu : GPUSpec
        Its ``bf16_dense_tflops`` and ``fp8_dense_tflops`` [TFLOP/s].
    precision : {"bf16", "fp8", "mxfp8"} or array of these names

    Returns
    -------
    PrecisionPeaks
        ``gemm_tflops`` and ``other_tflops`` [TFLOP/s], broadcast to ``precision``.

    References
    ----------
    .. [1] Transformer Engine docs, "Performance Considerations", Table 2 (the three GEMMs
       of a linear layer run on quantized tensors).
    .. [2] Micikevicius et al. 2022, arXiv:2209.05433, §4.
    """
    prec = check_precision(precision, gpu)
    fp8 = np.nan if gpu.fp8_dense_tflops is None else gpu.fp8_dense_tflops
    gemm = np.where(prec == "bf16", gpu.bf16_dense_tflops, fp8).astype(float)
    other = np.full(prec.shape, float(gpu.bf16_dense_tflops))
    return PrecisionPeaks(v.result(gemm), v.result(other))


def _is_blackwell(generation: ArrayLike) -> np.ndarray:
    gen = np.asarray(generation)
    if gen.dtype.kind not in "UO":
        raise v.InputError("generation", f"generation must be a GPU generation name such as "
                                         f"'hopper' or 'blackwell', got {generation!r}")
    return gen == "blackwell"


def quantized_copy_bytes_per_element(precision: ArrayLike = "fp8",
                                     generation: ArrayLike = "hopper") -> float | np.ndarray:
    r"""Bytes of the quantized copies one high-precision element needs for training.

    Every quantized tensor is used row-wise (forward GEMM) and column-wise (backward
    GEMMs) ([1] Table 2). Per element:

    .. math:: q = \begin{cases} 0 & \text{bf16} \\
                               2 \times 1 & \text{fp8 on Hopper/Ada (physical transpose)} \\
                               1 & \text{fp8 on Blackwell (one layout serves both)} \\
                               2\,(1 + 1/32) & \text{mxfp8 (row- and column-wise blocks differ)}
              \end{cases}

    The MXFP8 term is one byte of E4M3 plus one E8M0 scale byte per 32 elements, for each
    of the two orientations ([2] §5; [1] "MXFP8: Handling transposes"). Per-tensor FP32
    scales (one per tensor) are negligible. GPUs other than Blackwell are treated like
    Hopper (documented for Ada; an assumption for AMD CDNA3).

    Parameters
    ----------
    precision : {"bf16", "fp8", "mxfp8"} or array of these names
    generation : str or array of str
        GPU generation as in ``data/gpus.csv`` ("hopper", "blackwell", ...).

    Returns
    -------
    bytes : float or array
        Bytes per element of all quantized copies [bytes].

    References
    ----------
    .. [1] Transformer Engine docs, "Performance Considerations: Handling transposes"
       (Hopper needs a physically transposed columnwise tensor; Blackwell does not);
       "MXFP8" (rowwise 1x32 and columnwise 32x1 blocks, both quantized from the
       full-precision data).
    .. [2] OCP Microscaling Formats (MX) Specification v1.0, §5 (k = 32, E8M0 scale).
    """
    prec = v.choices("precision", precision, PRECISIONS)
    bw = _is_blackwell(generation)
    fp8 = np.where(bw, 1.0, 2.0)
    mx = 2.0 * (1.0 + 1.0 / MX_BLOCK)
    return v.result(np.where(prec == "bf16", 0.0, np.where(prec == "mxfp8", mx, fp8)))


def _saved_input_bytes(prec: np.ndarray) -> np.ndarray:
    """Bytes per element of the one quantized GEMM input a linear layer keeps for backward:
    only the column-wise usage is saved (TE ``update_usage(rowwise_usage=False)``)."""
    return np.where(prec == "mxfp8", 1.0 + 1.0 / MX_BLOCK, 1.0)


class Shard(NamedTuple):
    """One micro-batch's tokens on one GPU, checked: s [tokens], b [sequences], t and c [-]."""

    seq_len: np.ndarray | int
    micro_batch: np.ndarray
    tp: np.ndarray
    cp: np.ndarray


def _check_shard(model: ModelSpec, seq_len: ArrayLike | None, micro_batch: ArrayLike, tp: ArrayLike,
                 cp: ArrayLike) -> Shard:
    """The checked tokens of one micro-batch and parallel sizes (s, b, t, c), s the model's
    by default: the one argument check of the per-layer activation and FP8-traffic formulas
    (here and in :mod:`llmcost.training.memory`); the model and the options are checked by
    their own groups."""
    s = model.seq_len if seq_len is None else v.integer("seq_len", seq_len)
    return Shard(s, v.integer("micro_batch", micro_batch), v.integer("tp", tp), v.integer("cp", cp))


def _dims(model: ModelSpec, s: float | np.ndarray, b: float | np.ndarray, t: float | np.ndarray,
          c: float | np.ndarray, sp: ArrayLike) -> tuple[np.ndarray | float, ...]:
    h, a, f = model.hidden, model.heads, model.ffn_hidden
    assert model.kv_heads is not None and model.head_dim is not None and f is not None
    kv, d = model.kv_heads, model.head_dim
    tokens = s / c * b
    d_q = a * d
    # beyond t = kv_heads Megatron replicates KV heads: one head's K and V per GPU
    d_kv_gpu = kv * d / np.minimum(t, kv)
    # norm outputs (QKV and FFN-up inputs) and row-parallel outputs are full width on every
    # TP rank, or sharded over t with sequence parallelism
    wide = h / np.where(sp, t, 1)
    return tokens, h, f, t, d_q, d_kv_gpu, model.gated_ffn, wide


def fp8_cast_bytes_per_layer(model: ModelSpec, seq_len: ArrayLike | None = None, micro_batch: ArrayLike = 1,
                             tp: ArrayLike = 1, cp: ArrayLike = 1, options: LayerOptions | None = None,
                             generation: ArrayLike = "hopper", scaling: str = "current") -> float | np.ndarray:
    r"""HBM traffic of quantizing GEMM operands, per layer and micro-batch, on one GPU.

    Each linear layer quantizes its input X in the forward pass and the gradient of its
    output dY in the backward pass (its weight is quantized once per step:
    :func:`fp8_weight_cast_bytes`); X is saved already quantized, so the backward does not
    cast it again ([1] Table 2, Memory usage). Elements cast per token:

    .. math::
        E_{fwd} &= \underbrace{2 h_w}_{\text{QKV, FFN-up inputs}} + \frac{d_q + f}{t}
                   \quad\text{(projection and FFN-down inputs)}\\
        E_{bwd} &= \frac{d_q}{t} + 2 d_{kv}' + \frac{k f}{t} + 2 h_w
                   \quad\text{(dY of QKV, FFN-up, projection and FFN-down)}

    with h_w = h, or h / t with sequence parallelism (TE casts the local shard and
    all-gathers FP8), d_kv' = a_kv d / min(t, a_kv), k = 2 for a gated FFN (gate and up)
    else 1. Full recomputation runs the forward casts again. Bytes per element cast:

    .. math:: \beta = 2 + 2\,[\text{fp8, current scaling}] + q

    a BF16 read, a second BF16 read for the per-tensor amax under current scaling ([1]
    "FP8 Current Scaling: quantization reads the tensor twice"; delayed scaling and MXFP8
    take the amax in the casting pass), and the writes q of
    :func:`quantized_copy_bytes_per_element` (both usages, since dY and X are each used
    row-wise and column-wise). Traffic = T (E_fwd (1 + [full]) + E_bwd) beta, T = b s / c.

    This counts every cast as a separate kernel. TE fuses the cast into the LayerNorm of
    ``LayerNormLinear``/``LayerNormMLP`` ([1] "Fused layers"), which saves the BF16 read of
    the two norm outputs where the recipe allows it; the formula is then an upper bound.
    The per-tensor amax all-reduce across TP ranks (sequence parallelism, current scaling)
    is a latency, not traffic, and is not counted.

    Parameters
    ----------
    model : ModelSpec
        h, a, a_kv, d, f and the FFN's gating.
    seq_len : int or array, optional
        s [tokens]; default the model's.
    micro_batch : int or array
        b [sequences].
    tp, cp : int or array
        Tensor- and context-parallel sizes t, c [-].
    options : LayerOptions, optional
        ``sequence_parallel``; ``recompute`` (selective recomputation repeats only core
        attention, no linear layer); ``precision``, "bf16" giving 0. None: FP8 with the
        other defaults, ``LayerOptions(precision="fp8")``.
    generation : str or array of str
        GPU generation ("hopper", "blackwell", ...).
    scaling : {"current", "delayed"}
        Per-tensor FP8 recipe (ignored for MXFP8).

    Returns
    -------
    bytes : float or array
        Bytes read and written per layer per micro-batch per GPU [bytes].

    References
    ----------
    .. [1] Transformer Engine docs, "Performance Considerations" (Table 2, Memory usage,
       Fused layers, Distributed training), "FP8 Current Scaling", "MXFP8".
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §4.1 (the tensors of a layer).
    .. [3] Williams et al., "Roofline", CACM 52(4), 2009 (memory-bound time = bytes / bandwidth).
    """
    v.choice("scaling", scaling, FP8_SCALINGS)
    opts = LayerOptions(precision="fp8") if options is None else options
    prec, rec = np.asarray(opts.precision), np.asarray(opts.recompute)
    tokens, h, f, t, d_q, d_kv, gated, wide = _dims(
        model, *_check_shard(model, seq_len, micro_batch, tp, cp), opts.sequence_parallel)
    fwd = 2.0 * wide + (d_q + f) / t
    bwd = d_q / t + 2.0 * d_kv + np.where(gated, 2.0, 1.0) * f / t + 2.0 * wide
    elements = tokens * (fwd * np.where(rec == "full", 2.0, 1.0) + bwd)
    amax = np.where((prec == "fp8") & (scaling == "current"), BF16_BYTES, 0.0)
    per_element = BF16_BYTES + amax + quantized_copy_bytes_per_element(prec, generation)
    return v.result(np.where(prec == "bf16", 0.0, elements * per_element))


def fp8_weight_cast_bytes(gemm_params: ArrayLike, precision: ArrayLike = "fp8", generation: ArrayLike = "hopper",
                          scaling: str = "current", weight_bytes: ArrayLike = 2.0) -> float | np.ndarray:
    r"""HBM traffic of quantizing the GEMM weights, once per optimizer step, on one GPU.

    TE quantizes each weight on the first micro-batch of a step and reuses the quantized
    copies for the others (Megatron-Core passes ``is_first_microbatch``); per element it
    reads the high-precision weight (and reads it again for the amax under per-tensor
    current scaling) and writes both usages:

    .. math:: V_w = P_{gemm}\,\left(w + w\,[\text{fp8, current}] + q\right)

    with q from :func:`quantized_copy_bytes_per_element`. With ZeRO-3/FSDP the weights are
    gathered, and so cast, every micro-batch: multiply by the micro-batches per step.

    Parameters
    ----------
    gemm_params : float or array
        GEMM weights held by the GPU P_gemm [-] (layers on the stage x
        :func:`llmcost.training.flops.matmul_params_per_layer` / t); embeddings and the LM
        head stay BF16 and are not counted.
    precision : {"bf16", "fp8", "mxfp8"} or array of these names
    generation : str or array of str
        GPU generation ("hopper", "blackwell", ...).
    scaling : {"current", "delayed"}
    weight_bytes : float or array
        w, bytes per element of the weight the module holds [bytes]: 2 for BF16 model
        weights (Megatron ``--bf16``, FP32 master copy in the optimizer), 4 for FP32.

    Returns
    -------
    bytes : float or array
        Bytes read and written per optimizer step per GPU [bytes].

    References
    ----------
    .. [1] Transformer Engine docs, "Performance Considerations: Memory usage" (weights
       stored in high precision, quantized before the GEMM), "FP8 Current Scaling".
    """
    v.choice("scaling", scaling, FP8_SCALINGS)
    prec = v.choices("precision", precision, PRECISIONS)
    p = v.nonnegative("gemm_params", gemm_params)
    w = v.positive("weight_bytes", weight_bytes)
    amax = np.where((prec == "fp8") & (scaling == "current"), w, 0.0)
    per_element = w + amax + quantized_copy_bytes_per_element(prec, generation)
    return v.result(np.where(prec == "bf16", 0.0, p * per_element))


def fp8_weight_copy_bytes(gemm_params: ArrayLike, precision: ArrayLike = "fp8",
                          generation: ArrayLike = "hopper") -> float | np.ndarray:
    r"""Memory of the quantized weight copies each GPU keeps beside its BF16 weights.

    .. math:: M_{w8} = P_{gemm}\; q

    q = 2 bytes for FP8 on Hopper (row-wise + transposed copy), 1 on Blackwell, 2 (1 + 1/32)
    for MXFP8, 0 for BF16 (:func:`quantized_copy_bytes_per_element`). The copies are sharded
    as the weights are (over t, and over the stage's layers); they are cached for the step,
    so they stay resident next to the BF16 weights, gradients and optimizer states. Under
    ZeRO-3/FSDP only the gathered layers' copies exist at a time: pass those layers' GEMM
    weights.

    Parameters
    ----------
    gemm_params : float or array
        GEMM weights on the GPU P_gemm [-].
    precision : {"bf16", "fp8", "mxfp8"} or array of these names
    generation : str or array of str
        GPU generation ("hopper", "blackwell", ...).

    Returns
    -------
    bytes : float or array
        Bytes per GPU [bytes].

    References
    ----------
    .. [1] Transformer Engine docs, "Performance Considerations: Memory usage" (FP8
       training with BF16 weights: the weight is held in BF16 and in FP8), "Handling
       transposes".
    .. [2] OCP MX Specification v1.0, §5.
    """
    p = v.nonnegative("gemm_params", gemm_params)
    return v.result(p * quantized_copy_bytes_per_element(precision, generation))


def fp8_activation_saving_bytes_per_layer(model: ModelSpec, seq_len: ArrayLike | None = None,
                                          micro_batch: ArrayLike = 1, tp: ArrayLike = 1, cp: ArrayLike = 1,
                                          options: LayerOptions | None = None) -> float | np.ndarray:
    r"""Activation bytes per layer that FP8 linear layers save (or add) against BF16.

    Korthikanti's per-layer count ([2] §4.1; :func:`llmcost.training.memory.
    activation_bytes_per_layer`) stores each GEMM input in BF16, 2 bytes per element. TE's
    FP8 linear layers save their input quantized instead, column-wise usage only ([1]
    Memory usage: "TE saves the columnwise quantized input"), q_s = 1 byte per element
    (1 + 1/32 with MXFP8 scales). Per token, the GEMM inputs of Korthikanti's count are:

    - the QKV input and the FFN-up input (norm outputs, 2h + 2h; TE's ``LayerNormLinear``
      writes them directly in FP8, the norm keeps its own BF16 input): saving (2 - q_s) 2h,
      divided by t with sequence parallelism;
    - the FFN-down input (activation output, 2f/t; the activation function keeps its BF16
      input, the FFN-up output): saving (2 - q_s) f / t;
    - the projection input, which is also the attention output. Without flash attention
      nothing else keeps it: saving (2 - q_s) d_q / t. FlashAttention keeps its BF16 output
      for its own backward, so the FP8 copy comes on top ([1] "Handling transposes",
      fusion 1: extra memory "if it is the attention output which is saved anyway"):
      saving -q_s d_q / t.

    .. math:: \Delta M = \frac{s b}{c}\left[(2 - q_s)\left(\frac{2h}{t^{[SP]}}
              + \frac{f}{t}\right) + \delta\,\frac{d_q}{t}\right],\qquad
              \delta = \begin{cases} -q_s & \text{flash attention} \\ 2 - q_s & \text{else}
              \end{cases}

    Q, K, V (inputs of BF16 attention), softmax statistics, dropout masks and the norm
    inputs are unchanged. Full recomputation keeps only the layer input (not a GEMM input):
    saving 0. Selective recomputation keeps the linear inputs: same as none.

    Parameters
    ----------
    model : ModelSpec
        h, a, d and f (the FFN-down input is f wide, gated or not).
    seq_len : int or array, optional
        s [tokens]; default the model's.
    micro_batch : int or array
        b [sequences].
    tp, cp : int or array
        t, c [-].
    options : LayerOptions, optional
        ``sequence_parallel``, ``recompute``, ``flash_attention`` (fused attention that
        keeps its BF16 output for backward) and ``precision``. None: FP8 with the other
        defaults, ``LayerOptions(precision="fp8")``.

    Returns
    -------
    bytes : float or array
        Bytes per layer per GPU to subtract from the BF16 activation count [bytes]
        (negative: FP8 adds memory).

    References
    ----------
    .. [1] Transformer Engine docs, "Performance Considerations" (Handling transposes,
       Memory usage, Fused layers).
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §4.1, Table 2.
    .. [3] T. Dao, "FlashAttention-2", arXiv:2307.08691, Algorithm 2 (the backward pass
       reads the output O).
    """
    opts = LayerOptions(precision="fp8") if options is None else options
    prec, rec, flash = np.asarray(opts.precision), np.asarray(opts.recompute), np.asarray(opts.flash_attention)
    tokens, h, f, t, d_q, _, _, wide = _dims(
        model, *_check_shard(model, seq_len, micro_batch, tp, cp), opts.sequence_parallel)
    q = _saved_input_bytes(prec)
    gain = BF16_BYTES - q
    proj = np.where(flash, -q, gain) * d_q / t
    per_token = gain * 2.0 * wide + gain * f / t + proj
    per_token = np.where((prec == "bf16") | (rec == "full"), 0.0, per_token)
    return v.result(tokens * per_token)

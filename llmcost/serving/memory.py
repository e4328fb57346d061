"""Serving memory per GPU: weights by quantization format, KV cache per token, concurrency.

GB = 1e9 bytes; GiB = 2**30 bytes. The model is a :class:`llmcost.training.arch.ModelSpec`
(catalog or config.json); the functions here take its numbers, so they broadcast over arrays
of layouts.

References
----------
1. DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts
   Language Model", arXiv:2405.04434, 2024, §2.1.2-2.1.4 and Table 1 (MLA caches the
   d_c = 512 latent and the d_h^R = 64 decoupled RoPE key per layer and token).
2. J. Lin et al., "AWQ: Activation-aware Weight Quantization", MLSys 2024, §3 (INT4,
   group size 128, FP16 scale and zero point per group); E. Frantar et al., "GPTQ",
   ICLR 2023 (the same group layout).
3. Open Compute Project, "OCP Microscaling Formats (MX) Specification v1.0", 2023,
   §5 and Table 1 (MXFP4: E2M1 elements, one E8M0 scale per 32).
4. NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference"
   (developer blog, 2025): E2M1 elements, one FP8 E4M3 scale per 16, one FP32 per tensor.
5. W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with
   PagedAttention", SOSP 2023, §2.3 (KV cache 2 x layers x kv heads x head dim x bytes per
   token) and §4 (blocks of 16 tokens).
6. OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card", 2025, §2.1 (alternating banded
   window of 128 tokens and dense layers; learned attention sinks hold no KV).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

if TYPE_CHECKING:
    from ..training.arch import ModelSpec

#: weight format -> (bits per element, scale bits per group, group size); a group size of 0
#: means one scale per tensor or channel, negligible per weight
WEIGHT_FORMATS = {
    "bf16": (16, 0, 0),
    "fp8": (8, 0, 0),                # per-tensor (ModelOpt) scale
    "int8": (8, 0, 0),               # per-channel scale: one per row of thousands
    "int4": (4, 16 + 4, 128),        # AWQ/GPTQ: FP16 scale + 4-bit zero per 128 [2]
    "mxfp4": (4, 8, 32),             # E8M0 per 32 [3]
    "nvfp4": (4, 8, 16),             # E4M3 per 16 (+ FP32 per tensor, negligible) [4]
}
#: "fp4" is NVFP4, the FP4 format TensorRT-LLM's published Blackwell checkpoints use
WEIGHT_ALIASES = {"fp4": "nvfp4"}
WEIGHT_CHOICES = tuple(WEIGHT_FORMATS) + tuple(WEIGHT_ALIASES)
#: KV cache element -> bytes
KV_FORMATS = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}
#: PagedAttention block [tokens] (vLLM and SGLang default 16; TensorRT-LLM 32 tokens per
#: block, rounding is within 1% for the sequence lengths served)
BLOCK_TOKENS = 16


def weight_format(name: str) -> str:
    """Canonical weight format of ``name`` ("fp4" -> "nvfp4"); InputError otherwise."""
    name = v.choice("weights", name, WEIGHT_CHOICES)
    return WEIGHT_ALIASES.get(name, name)


def bytes_per_weight(fmt: str) -> float:
    r"""Bytes each weight takes in a quantization format, group scales included.

    .. math:: b = \frac{1}{8}\left(n_{bits} + \frac{n_{scale}}{g}\right)

    Parameters
    ----------
    fmt : str
        One of ``WEIGHT_CHOICES``: bf16, fp8, int8, int4 (group 128, FP16 scale + 4-bit
        zero), mxfp4 (E8M0 per 32), nvfp4 or fp4 (E4M3 per 16).

    Returns
    -------
    bytes_per_weight : float
        b [bytes]: bf16 2, fp8 1, int8 1, int4 0.5195, mxfp4 0.53125, nvfp4 0.5625.

    References
    ----------
    .. [1] AWQ (Lin et al. 2024) §3; OCP MX v1.0 Table 1; NVIDIA NVFP4 blog (2025).
    """
    bits, scale_bits, group = WEIGHT_FORMATS[weight_format(fmt)]
    return (bits + (scale_bits / group if group else 0.0)) / 8.0


def weights_bytes_per_gpu(dense_params: ArrayLike, expert_params: ArrayLike, vocab_params: ArrayLike,
                          tp: ArrayLike, dense_format: str = "bf16", expert_format: str | None = None,
                          attention_dp: bool = False) -> float | np.ndarray:
    r"""Weight bytes each GPU of a serving instance holds.

    .. math::
        W = \frac{P_d\, b_d}{t_a} + \frac{P_e\, b_e}{t} + \frac{2\, P_v}{t}, \quad
        t_a = 1 \text{ with data-parallel attention, else } t

    Routed experts are split over the instance's t GPUs whether by expert parallelism or by
    tensor parallelism inside each expert (E/ep experts of width f/(t/ep) per GPU); the
    embedding and output head stay in BF16, as AWQ, ModelOpt FP8/FP4 and gpt-oss's MXFP4
    checkpoints keep them, and are vocabulary-parallel. Norms count with the dense weights
    (a few MB; they stay BF16 in practice).

    Parameters
    ----------
    dense_params : float or array
        P_d, attention, dense FFN, shared experts, router and norms [-].
    expert_params : float or array
        P_e, routed expert weights [-] (0: a dense model).
    vocab_params : float or array
        P_v, embedding plus untied output head [-].
    tp : int or array
        t, GPUs of one serving instance (tensor parallel size) [-].
    dense_format, expert_format : str
        Formats of :func:`bytes_per_weight`; ``expert_format`` None: as ``dense_format``
        (gpt-oss ships MXFP4 experts beside BF16 attention).
    attention_dp : bool
        Attention data-parallel (SGLang/TensorRT-LLM DP attention): each GPU holds all of it.

    Returns
    -------
    weights_bytes : float or array
        W [bytes].

    References
    ----------
    .. [1] AWQ §3; NVIDIA ModelOpt FP8/NVFP4 checkpoints; gpt-oss model card §2.1.
    """
    pd_ = v.nonnegative("dense_params", dense_params)
    pe = v.nonnegative("expert_params", expert_params)
    pv = v.nonnegative("vocab_params", vocab_params)
    t = v.integer("tp", tp)
    bd = bytes_per_weight(dense_format)
    be = bytes_per_weight(expert_format or dense_format)
    ta = 1 if attention_dp else t
    return v.result(pd_ * bd / ta + pe * be / t + 2.0 * pv / t)


def model_weight_split(model: ModelSpec) -> tuple[float, float, float]:
    """(dense, routed-expert, vocabulary) parameters of a ModelSpec [-] for
    :func:`weights_bytes_per_gpu`; the three add up to ``model.params``."""
    vocab = model.embedding_params + (0 if model.tied_embeddings else model.output_params)
    expert = model.expert_params
    return float(model.params - expert - vocab), float(expert), float(vocab)


def kv_bytes_per_token_layer(kv_heads: ArrayLike, head_dim: ArrayLike, kv_bytes: ArrayLike = 2.0,
                             attention: str = "gqa", kv_lora_rank: int = 0,
                             qk_rope_head_dim: int = 0) -> float | np.ndarray:
    r"""KV-cache bytes one token leaves in one layer.

    .. math::
        b_{GQA} = 2\, n_{kv}\, d_h\, e, \qquad b_{MLA} = (d_c + d_h^R)\, e

    Parameters
    ----------
    kv_heads : int or array
        n_kv, key/value heads (MHA: = heads) [-].
    head_dim : int or array
        d_h [-].
    kv_bytes : float or array
        e, bytes per cached element [bytes] (bf16 2, fp8 1).
    attention : {"gqa", "mla"}
    kv_lora_rank, qk_rope_head_dim : int
        d_c and d_h^R of MLA [-] (DeepSeek-V2/V3: 512 and 64).

    Returns
    -------
    bytes_per_token_layer : float or array
        [bytes].

    References
    ----------
    .. [1] Kwon et al. 2023 §2.3; DeepSeek-V2 (arXiv:2405.04434) §2.1.4, Table 1.
    """
    e = v.positive("kv_bytes", kv_bytes)
    if v.choice("attention", attention, ("gqa", "mla")) == "mla":
        return v.result((v.integer("kv_lora_rank", kv_lora_rank)
                         + v.integer("qk_rope_head_dim", qk_rope_head_dim, minimum=0)) * e)
    return v.result(2.0 * v.integer("kv_heads", kv_heads) * v.integer("head_dim", head_dim) * e)


def kv_bytes_per_sequence(per_layer_bytes: ArrayLike, layers: int, context_tokens: ArrayLike,
                          window_layers: int = 0, window_tokens: int = 0,
                          block_tokens: int = BLOCK_TOKENS) -> float | np.ndarray:
    r"""KV-cache bytes one sequence of c tokens holds, sliding-window layers apart.

    .. math::
        K(c) = b \left[(L - L_w)\, \lceil c \rceil_B + L_w\, \lceil \min(w, c) \rceil_B\right]

    with :math:`\lceil x \rceil_B` rounded up to whole blocks of B tokens (paged cache).
    Attention sinks (gpt-oss) are learned logits and cache nothing.

    Parameters
    ----------
    per_layer_bytes : float or array
        b, :func:`kv_bytes_per_token_layer` [bytes].
    layers : int
        L [-].
    context_tokens : float or array
        c, tokens of the sequence (prompt + generated) [-].
    window_layers : int
        L_w, layers with a sliding window [-].
    window_tokens : int
        w, the window [tokens].
    block_tokens : int
        B, tokens per cache block [-]; 1 counts tokens exactly.

    Returns
    -------
    bytes_per_sequence : float or array
        K [bytes].

    References
    ----------
    .. [1] Kwon et al. 2023 §4.2; gpt-oss model card §2.1.
    """
    b = v.nonnegative("per_layer_bytes", per_layer_bytes)
    n_layers = v.integer("layers", layers)
    c = v.nonnegative("context_tokens", context_tokens)
    lw = v.integer("window_layers", window_layers, minimum=0)
    w = v.integer("window_tokens", window_tokens, minimum=0)
    blk = v.integer("block_tokens", block_tokens)
    full = np.ceil(c / blk) * blk
    win = np.ceil(np.minimum(w, c) / blk) * blk if w else full
    return v.result(b * ((n_layers - lw) * full + lw * win))


def model_kv_per_layer(model: ModelSpec, kv_format: str = "bf16") -> float:
    """:func:`kv_bytes_per_token_layer` of a ModelSpec [bytes] with its KV format."""
    e = KV_FORMATS[v.choice("kv", kv_format, tuple(KV_FORMATS))]
    # ModelSpec.__post_init__ fills both from heads and hidden
    assert model.kv_heads is not None and model.head_dim is not None
    return float(kv_bytes_per_token_layer(model.kv_heads, model.head_dim, e, model.attention,
                                          model.kv_lora_rank, model.qk_rope_head_dim))


def model_kv_bytes_per_sequence(model: ModelSpec, context_tokens: ArrayLike, kv_format: str = "bf16",
                                block_tokens: int = BLOCK_TOKENS) -> float | np.ndarray:
    """:func:`kv_bytes_per_sequence` of a ModelSpec [bytes]."""
    windowed = model.window_layers if model.attention_window else 0
    return kv_bytes_per_sequence(model_kv_per_layer(model, kv_format), model.layers,
                                 context_tokens, windowed, model.attention_window, block_tokens)


def kv_shard_fraction(kv_heads: ArrayLike, tp: ArrayLike, attention: str = "gqa",
                      attention_dp: bool = False) -> float | np.ndarray:
    r"""Share of a sequence's KV cache one GPU of a tensor-parallel instance holds.

    .. math::
        f = \frac{\lceil n_{kv} / t \rceil}{n_{kv}} \;(\text{GQA}), \quad f = 1\;(\text{MLA}
        \text{ or DP attention})

    GQA heads split over t GPUs and are replicated once t exceeds n_kv; MLA's latent is one
    vector per token that every TP rank keeps whole (the reason for DP attention); with DP
    attention each GPU serves its own sequences with their whole cache.

    Parameters
    ----------
    kv_heads : int or array
        n_kv [-].
    tp : int or array
        t [-].
    attention : {"gqa", "mla"}
    attention_dp : bool

    Returns
    -------
    fraction : float or array
        f [-], in (0, 1].

    References
    ----------
    .. [1] Kwon et al. 2023 §4.6 (distributed execution); DeepSeek-V2 §2.1.
    """
    n = v.integer("kv_heads", kv_heads)
    t = v.integer("tp", tp)
    if attention_dp or v.choice("attention", attention, ("gqa", "mla")) == "mla":
        return v.result(np.ones(np.broadcast(n, t).shape))
    return v.result(np.ceil(n / t) / n)


def max_concurrency(memory_bytes: ArrayLike, weights_bytes: ArrayLike, activation_bytes: ArrayLike,
                    kv_bytes_per_seq_per_gpu: ArrayLike, memory_fraction: ArrayLike = 0.9,
                    sequences_per_gpu: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Sequences an instance can keep in its KV cache beside weights and activations.

    .. math:: C = \left\lfloor \frac{\phi M - W - A}{K_{gpu}} \right\rfloor \cdot s

    Parameters
    ----------
    memory_bytes : float or array
        M, HBM per GPU [bytes].
    weights_bytes : float or array
        W, per GPU [bytes].
    activation_bytes : float or array
        A, activation workspace per GPU [bytes].
    kv_bytes_per_seq_per_gpu : float or array
        K_gpu, one sequence's KV bytes on a GPU [bytes] (:func:`kv_shard_fraction` x
        :func:`kv_bytes_per_sequence`).
    memory_fraction : float or array
        phi, share of HBM the engine takes [-] (vLLM ``gpu_memory_utilization`` 0.9).
    sequences_per_gpu : float or array
        s, 1 with a tensor-parallel cache; t with DP attention (each GPU caches its own) [-].

    Returns
    -------
    concurrency : float or array
        C [sequences], 0 when the weights do not fit.

    References
    ----------
    .. [1] Kwon et al. 2023 §4 and §6 (vLLM's profiled free memory fills with KV blocks).
    """
    m = v.positive("memory_bytes", memory_bytes)
    w = v.nonnegative("weights_bytes", weights_bytes)
    a = v.nonnegative("activation_bytes", activation_bytes)
    k = v.positive("kv_bytes_per_seq_per_gpu", kv_bytes_per_seq_per_gpu)
    phi = v.fraction("memory_fraction", memory_fraction)
    free = np.maximum(phi * m - w - a, 0.0)
    return v.result(np.floor(free / k) * v.positive("sequences_per_gpu", sequences_per_gpu))


def activation_bytes(tokens_per_step: ArrayLike, hidden: int, ffn_hidden_per_gpu: ArrayLike, vocab: int,
                     decode_sequences: ArrayLike, tp: ArrayLike, act_bytes: float = 2.0) -> float | np.ndarray:
    r"""Activation workspace of one forward step per GPU (the engine's profiling run).

    .. math:: A = e\, m\, (4 h + 2 f_{gpu}) + 4\, n_d\, V / t

    m tokens through one layer at a time: the residual, normed input, attention output and
    QKV (about 4h) and the gated FFN's two up-projections (2 f per GPU); FP32 logits of the
    n_d sequences sampled.

    Parameters
    ----------
    tokens_per_step : float or array
        m, the engine's token budget per step (vLLM ``max_num_batched_tokens``) [-].
    hidden : int
        h [-].
    ffn_hidden_per_gpu : float or array
        f_gpu, FFN width on one GPU [-].
    vocab : int
        V [-].
    decode_sequences : float or array
        n_d, sequences sampled per step [-].
    tp : int or array
        t [-].
    act_bytes : float
        e [bytes].

    Returns
    -------
    activation_bytes : float or array
        A [bytes].

    References
    ----------
    .. [1] Kwon et al. 2023 §6 (memory profiling with the maximum batched tokens); Korthikanti
       et al. 2022, arXiv:2205.05198, §4.1 (per-layer activation terms).
    """
    m = v.nonnegative("tokens_per_step", tokens_per_step)
    t = v.integer("tp", tp)
    return v.result(act_bytes * m * (4.0 * hidden + 2.0 * v.nonnegative(
        "ffn_hidden_per_gpu", ffn_hidden_per_gpu)) + 4.0 * v.nonnegative(
        "decode_sequences", decode_sequences) * vocab / t)

"""Parameter counts and training FLOPs of dense decoder-only transformers.

One function per model. All take scalars or numpy arrays and broadcast. Symbols follow
Narayanan et al. (2021): l layers, h hidden size, a attention heads, s sequence length,
V vocabulary, B global batch (sequences). FLOPs count a multiply-add as 2 FLOPs.

References
----------
1. D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
   Using Megatron-LM", SC'21, arXiv:2104.04473. Eq. 2 (parameters), Eq. 3 (FLOPs per
   iteration with full activation recomputation), Table 1.
2. V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
   Models", MLSys 2023, arXiv:2205.05198. Eq. 7 (model FLOPs), Eq. 8 (hardware FLOPs with
   selective recomputation).
3. A. Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways",
   arXiv:2204.02311, Appendix B (6N + 12 L H Q T).
4. J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, §2.1
   (C = 6 N D).
5. J. Hoffmann et al., "Training Compute-Optimal Large Language Models",
   arXiv:2203.15556 (about 20 tokens per parameter; Table 3).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

if TYPE_CHECKING:
    from .arch import ModelSpec

RECOMPUTE_MODES = ("none", "selective", "full")
BIAS_MODES = ("all", "qkv", "none")
#: LayerNorm (scale and bias, 2h), RMSNorm (scale, h), LayerNorm without bias (scale, h; MPT)
NORMS = ("layernorm", "rmsnorm", "layernorm_nobias")
#: ALiBi (BLOOM, MPT, Falcon's option) biases the scores by distance and has no parameters
POSITION_EMBEDDINGS = ("learned", "rope", "none", "alibi")

#: a dimension: one scalar, or a numpy array of them for many shapes (broadcasting)
IntOrArray = Any
BoolOrArray = Any


def _shape(layers: ArrayLike, hidden: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike | None,
           ffn_hidden: ArrayLike | None, head_dim: ArrayLike | None) -> tuple[np.ndarray, ...]:
    """Validated dimensions; defaults: kv_heads = heads (MHA), ffn = 4h, head_dim = h / a."""
    layers = v.integer("layers", layers)
    hidden = v.integer("hidden", hidden)
    heads = v.integer("heads", heads)
    kv_heads = heads if kv_heads is None else v.integer("kv_heads", kv_heads)
    v.divides("kv_heads", kv_heads, "heads", heads)
    ffn_hidden = 4 * hidden if ffn_hidden is None else v.integer("ffn_hidden", ffn_hidden)
    if head_dim is None:
        v.divides("heads", heads, "hidden", hidden)
        head_dim = cast(np.ndarray, hidden // heads)
    else:
        head_dim = v.integer("head_dim", head_dim)
    return layers, hidden, heads, kv_heads, ffn_hidden, head_dim


def matmul_params_per_layer(hidden: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike | None = None,
                            ffn_hidden: ArrayLike | None = None, gated_ffn: ArrayLike = False,
                            head_dim: ArrayLike | None = None) -> float | np.ndarray:
    r"""Weights of the matrix multiplications in one transformer layer.

    .. math:: P_{mm} = h d_q + 2 h d_{kv} + d_q h + k\, h f,\quad
              d_q = a\,d_{head},\; d_{kv} = a_{kv} d_{head},\; k = 3 \text{ (gated) or } 2

    Parameters
    ----------
    hidden : int or array
        Model width h [-].
    heads : int or array
        Query heads a [-].
    kv_heads : int or array, optional
        Key/value heads (grouped-query attention) [-]. Default: ``heads``.
    ffn_hidden : int or array, optional
        Feed-forward inner size f [-]. Default: 4h.
    gated_ffn : bool or array
        Gated FFN (SwiGLU/GeGLU: gate, up and down projections) instead of two matrices.
    head_dim : int or array, optional
        Per-head size [-]. Default: h / a.

    Returns
    -------
    params : int or array
        Matmul weights per layer [-]. For a = a_kv and f = 4h this is 12 h^2 (Eq. 2 of [1]).

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, Eq. 2.
    """
    _, hidden, heads, kv_heads, ffn_hidden, head_dim = _shape(1, hidden, heads, kv_heads,
                                                              ffn_hidden, head_dim)
    gated = v.boolean("gated_ffn", gated_ffn)
    q_dim = heads * head_dim
    kv_dim = kv_heads * head_dim
    attn = 2 * hidden * q_dim + 2 * hidden * kv_dim
    mlp = np.where(gated, 3, 2) * hidden * ffn_hidden
    return v.result(attn + mlp)


def parameter_count(model: ModelSpec) -> int:
    r"""Total parameters of a decoder-only transformer from its architecture.

    .. math:: P = l\,(P_{mm} + P_{bias} + n_{norm} P_{norm}) + P_{norm}\,(1 + [\text{embedding norm}])
              + V h\,(1 + [\text{untied}]) + s h\,[\text{learned positions}]

    with LayerNorm 2h per norm (scale and bias), RMSNorm and bias-free LayerNorm h;
    n_norm = 2 norms per layer (1 where attention and FFN read one shared norm in parallel,
    Falcon-7B); biases "all" = QKV, output projection and both FFN projections, "qkv" =
    query/key/value only (Qwen2), "none" (Llama). For a GPT layout (MHA, f = 4h, biases,
    LayerNorm, tied embeddings, learned positions) this is Eq. 2 of [1] plus the final
    LayerNorm (2h); BLOOM adds a LayerNorm on the word embeddings ([2]: 176,247,271,424).

    Parameters
    ----------
    model : ModelSpec
        A dense model with grouped-query attention (MoE, MLA, QK-norm and sinks:
        :attr:`llmcost.training.arch.ModelSpec.params`): l (``layers``), h, a, a_kv, d, f,
        the FFN's gating, V, s (counted only for learned position embeddings),
        ``tied_embeddings`` (the output projection shares the input embedding matrix),
        ``position_embedding``, ``norm``, ``biases``, n_norm (``norms_per_layer``) and
        ``embedding_norm`` (a norm on the word embeddings, BLOOM's
        ``word_embeddings_layernorm``).

    Returns
    -------
    params : int
        Parameter count [-].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, Eq. 2:
       P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)).
    .. [2] BigScience, BLOOM model card (https://huggingface.co/bigscience/bloom, v1.3,
       2022-07): 176,247,271,424 parameters, 70 layers, h = 14336, LayerNorm on the
       embeddings; BLOOM paper arXiv:2211.05100, §3.2.
    """
    # the model's fields are checked by ModelSpec.__post_init__
    layers, hidden, heads, vocab, seq_len = model.layers, model.hidden, model.heads, model.vocab, model.seq_len
    kv_heads, ffn_hidden, head_dim = model.kv_heads, model.ffn_hidden, model.head_dim
    assert kv_heads is not None and ffn_hidden is not None and head_dim is not None
    gated, tied, biases, norm = model.gated_ffn, model.tied_embeddings, model.biases, model.norm
    q_dim = heads * head_dim
    kv_dim = kv_heads * head_dim
    mm = matmul_params_per_layer(hidden, heads, kv_heads, ffn_hidden, gated, head_dim)
    qkv_bias = q_dim + 2 * kv_dim
    bias: int | np.ndarray
    if biases == "all":
        bias = qkv_bias + hidden + np.where(gated, 2, 1) * ffn_hidden + hidden
    elif biases == "qkv":
        bias = qkv_bias
    else:
        bias = 0
    n_norms, emb_norm = model.norms_per_layer, model.embedding_norm
    per_norm = 2 * hidden if norm == "layernorm" else hidden
    per_layer = mm + bias + n_norms * per_norm
    embed = vocab * hidden * np.where(tied, 1, 2)
    pos = seq_len * hidden if model.position_embedding == "learned" else 0
    return int(layers * per_layer + per_norm * (1 + emb_norm) + embed + pos)


def megatron_parameter_count(layers: ArrayLike, hidden: ArrayLike, vocab: ArrayLike,
                             seq_len: ArrayLike) -> float | np.ndarray:
    r"""Parameters of a Megatron GPT model, Eq. 2 of Narayanan et al. (2021).

    .. math:: P = 12 l h^2 \left(1 + \frac{13}{12 h} + \frac{V + s}{12 l h}\right)

    Parameters
    ----------
    layers, hidden, vocab, seq_len : int or array
        l, h, V, s [-].

    Returns
    -------
    params : float or array
        Parameter count [-].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, Eq. 2 and Table 1.
    """
    l = v.positive("layers", layers)
    h = v.positive("hidden", hidden)
    V = v.positive("vocab", vocab)
    s = v.nonnegative("seq_len", seq_len)
    return v.result(12 * l * h**2 * (1 + 13 / (12 * h) + (V + s) / (12 * l * h)))


def flops_per_token_6n(params: ArrayLike) -> float | np.ndarray:
    r"""Training FLOPs per token by the 6N rule (forward 2N, backward 4N).

    .. math:: C_{token} = 6 N

    Parameters
    ----------
    params : float or array
        N [-] (Kaplan et al. use non-embedding parameters; pass what you wish to count).

    Returns
    -------
    flops : float or array
        FLOPs per token [FLOP].

    References
    ----------
    .. [1] Kaplan et al. 2020, arXiv:2001.08361, §2.1, C = 6 N D.
    """
    return v.result(6 * v.positive("params", params))


def flops_per_token_palm(params: ArrayLike, layers: ArrayLike, heads: ArrayLike, head_dim: ArrayLike,
                         seq_len: ArrayLike) -> float | np.ndarray:
    r"""Training FLOPs per token with attention, PaLM Appendix B.

    .. math:: C_{token} = 6 N + 12 L H Q T

    Parameters
    ----------
    params : float or array
        N [-].
    layers, heads, head_dim, seq_len : int or array
        L, H, Q, T [-].

    Returns
    -------
    flops : float or array
        FLOPs per token [FLOP]; rematerialisation not counted (model FLOPs).

    References
    ----------
    .. [1] Chowdhery et al. 2022, arXiv:2204.02311, Appendix B.
    """
    n, L, H, Q, T = v.checked(
        v.positive, params=params, layers=layers, heads=heads, head_dim=head_dim, seq_len=seq_len)
    return v.result(6 * n + 12 * L * H * Q * T)


@dataclass(frozen=True)
class ModelShape:
    """The dimensions of a dense decoder-only transformer that its FLOPs read, checked once;
    each a scalar or an array (numpy broadcasting: many shapes at once, as a
    :class:`~llmcost.training.arch.ModelSpec` cannot hold).

    layers, hidden, heads, vocab : int or array
        l, h, a, V [-].
    kv_heads, ffn_hidden, gated_ffn, head_dim
        See :func:`matmul_params_per_layer`; None is filled in with the default there
        (a_kv = a, f = 4h, d_head = h / a).
    """

    layers: IntOrArray
    hidden: IntOrArray
    heads: IntOrArray
    vocab: IntOrArray
    # keywords only: the FFN's shape, then attention's beyond the heads
    _: KW_ONLY
    gated_ffn: BoolOrArray = False
    ffn_hidden: IntOrArray | None = None
    kv_heads: IntOrArray | None = None
    head_dim: IntOrArray | None = None

    def __post_init__(self) -> None:
        dims = _shape(self.layers, self.hidden, self.heads, self.kv_heads, self.ffn_hidden,
                      self.head_dim)
        checked = dict(zip(("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "head_dim"), dims),
                       vocab=v.integer("vocab", self.vocab),
                       gated_ffn=v.boolean("gated_ffn", self.gated_ffn))
        for name, value in checked.items():
            # a Python scalar for a scalar, an array for an array (as Layout keeps them)
            scalar = value.item() if np.ndim(value) == 0 else value
            object.__setattr__(self, name, scalar)


def flops_per_token(model: ModelShape, seq_len: ArrayLike,
                    recompute: ArrayLike = "none") -> float | np.ndarray:
    r"""Training FLOPs per token from the architecture, with recomputation by name.

    Every matmul weight costs 6 FLOPs per token (2 forward, 4 backward); attention scores
    and their product with V cost 12 s d_q per layer; the logits 6 V h. Recomputation adds
    what the hardware executes again:

    .. math::
        C_{none} &= 6 (l P_{mm} + V h) + 12 l s d_q \\
        C_{selective} &= C_{none} + 12 l s d_q \\
        C_{full} &= \tfrac{4}{3}\,[6 l P_{mm} + 12 l s d_q] + 6 V h

    For a GPT layout these equal, per token, Eq. 7 (none: model FLOPs) and Eq. 8
    (selective) of [2] and Eq. 3 (full) of [1]; the attention term is counted over the full
    s x s score matrix, as those papers do.

    Parameters
    ----------
    model : ModelShape
        l, h, a, V and the matmul shapes (:func:`matmul_params_per_layer`); a
        :class:`~llmcost.training.arch.ModelSpec` gives its own with
        :attr:`~llmcost.training.arch.ModelSpec.shape`.
    seq_len : int or array
        s [tokens].
    recompute : {"none", "selective", "full"} or array of these names
        Activation recomputation; "none" gives model FLOPs (for MFU), the others hardware
        FLOPs (for HFU).

    Returns
    -------
    flops : float or array
        FLOPs per token [FLOP].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, Eq. 3.
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, Eq. 7 and 8.
    """
    rec = v.choices("recompute", recompute, RECOMPUTE_MODES)
    layers, hidden, heads, vocab, head_dim = model.layers, model.hidden, model.heads, model.vocab, model.head_dim
    seq_len = v.integer("seq_len", seq_len)
    mm = matmul_params_per_layer(hidden, heads, model.kv_heads, model.ffn_hidden, model.gated_ffn, head_dim)
    q_dim = heads * head_dim
    layer = 6.0 * layers * mm + 12.0 * layers * seq_len * q_dim
    logits = 6.0 * vocab * hidden
    out = np.where(rec == "full", layer * 4.0 / 3.0,
                   layer + np.where(rec == "selective", 12.0 * layers * seq_len * q_dim, 0.0))
    return v.result(out + logits)


def megatron_flops_per_iteration(global_batch: ArrayLike, seq_len: ArrayLike, layers: ArrayLike,
                                 hidden: ArrayLike, vocab: ArrayLike,
                                 recompute: str = "full") -> float | np.ndarray:
    r"""FLOPs of one training iteration of a Megatron GPT model, as the papers print them.

    .. math::
        F_{full} &= 96 B s l h^2 \left(1 + \frac{s}{6h} + \frac{V}{16 l h}\right)
        \quad\text{(Eq. 3 of [1])}\\
        F_{none} &= 72 B s l h^2 \left(1 + \frac{s}{6h} + \frac{V}{12 l h}\right)
        \quad\text{(Eq. 7 of [2])}\\
        F_{selective} &= 72 B s l h^2 \left(1 + \frac{s}{3h} + \frac{V}{12 l h}\right)
        \quad\text{(Eq. 8 of [2])}

    Parameters
    ----------
    global_batch, seq_len, layers, hidden, vocab : float or array
        B [sequences], s, l, h, V [-].
    recompute : {"full", "none", "selective"}

    Returns
    -------
    flops : float or array
        FLOPs per iteration [FLOP].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, Eq. 3.
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, Eq. 7 and 8.
    """
    v.choice("recompute", recompute, RECOMPUTE_MODES)
    B, s, l, h, V = v.checked(
        v.positive, global_batch=global_batch, seq_len=seq_len, layers=layers, hidden=hidden,
        vocab=vocab)
    k, k_s, k_v = _PAPER_COEFFICIENTS[recompute]
    return v.result(k * B * s * l * h**2 * (1 + s / (k_s * h) + V / (k_v * l * h)))


#: the printed equations' coefficients (k, k_s, k_V) of F = k B s l h^2 (1 + s / (k_s h) +
#: V / (k_V l h)) by recomputation: Eq. 3 of Narayanan 2021, Eq. 7 and 8 of Korthikanti 2022
_PAPER_COEFFICIENTS = {"full": (96, 6, 16), "none": (72, 6, 12), "selective": (72, 3, 12)}


def training_flops(flops_per_token: ArrayLike, tokens: ArrayLike) -> float | np.ndarray:
    r"""Total training FLOPs for D tokens.

    .. math:: C = C_{token} D

    Parameters
    ----------
    flops_per_token : float or array
        [FLOP].
    tokens : float or array
        D [tokens].

    Returns
    -------
    flops : float or array
        [FLOP].

    References
    ----------
    .. [1] Kaplan et al. 2020, arXiv:2001.08361, §2.1.
    """
    return v.result(v.positive("flops_per_token", flops_per_token) *
                    v.positive("tokens", tokens))


def chinchilla_optimal_tokens(params: ArrayLike, tokens_per_param: ArrayLike = 20.0) -> float | np.ndarray:
    r"""Compute-optimal training tokens, about 20 per parameter.

    .. math:: D_{opt} \approx 20 N

    Parameters
    ----------
    params : float or array
        N [-].
    tokens_per_param : float or array
        [tokens per parameter]; 20 by default.

    Returns
    -------
    tokens : float or array
        [tokens].

    References
    ----------
    .. [1] Hoffmann et al. 2022, arXiv:2203.15556, Table 3 (e.g. 70B -> 1.4T tokens).
    """
    return v.result(v.positive("params", params) *
                    v.positive("tokens_per_param", tokens_per_param))

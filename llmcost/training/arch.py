"""A transformer architecture as one validated value, the unit the rest of llmcost passes around."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .. import _validate as v
from . import flops, moe


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of a dense decoder-only transformer.

    Defaults describe a GPT/Megatron layout (MHA, FFN 4h, biases, LayerNorm, tied
    embeddings, learned positions, dropout); catalog rows override them.
    """

    layers: int
    hidden: int
    heads: int
    vocab: int
    seq_len: int
    kv_heads: int | None = None
    ffn_hidden: int | None = None
    gated_ffn: bool = False
    tied_embeddings: bool = True
    position_embedding: str = "learned"
    norm: str = "layernorm"
    biases: str = "all"
    dropout: bool = True
    head_dim: int | None = None
    id: str = "custom"
    name: str = ""
    published_params: float | None = None
    published_active_params: float | None = None
    # ---- mixture of experts (moe_experts = 0: a dense model); llmcost.training.moe
    #: routed experts E and experts per token k
    moe_experts: int = 0
    moe_top_k: int = 0
    #: one routed expert's FFN width f_e; the shared experts' total width f_s
    moe_ffn_hidden: int | None = None
    moe_shared_ffn_hidden: int = 0
    #: leading dense layers (DeepSeek-V3: 3) and the MoE layer step (Llama 4 Maverick: 2)
    moe_dense_layers: int = 0
    moe_layer_step: int = 1
    #: biases in the experts / on the router (gpt-oss: both; DeepSeek-V3: router only)
    moe_expert_biases: bool = False
    moe_router_bias: bool = False
    # ---- attention variants
    #: "gqa" (MHA/GQA/MQA) or "mla" (DeepSeek's multi-head latent attention; head_dim is
    #: then the no-position query/key dim d_n)
    attention: str = "gqa"
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int | None = None
    #: RMSNorm over head_dim on queries and keys (Qwen3); one learned sink logit per head
    #: (gpt-oss)
    qk_norm: bool = False
    attention_sinks: bool = False
    #: sliding-window attention of w tokens on some layers (gpt-oss: 128 on 18 of 36);
    #: 0: every layer attends to the whole sequence
    attention_window: int = 0
    window_layers: int = 0
    #: multi-token prediction modules (DeepSeek-V3: 1), reported beside the main model
    mtp_layers: int = 0
    #: vocabulary matrices the published active count includes: "embedding+head" (Mixtral,
    #: Qwen3, DeepSeek-V3, Llama 4) or "head" (gpt-oss)
    active_params_counts: str = "embedding+head"
    # ---- layer plumbing of older architectures (llmcost.training.hf_config reads them)
    #: norms per layer: 2 (before attention and before the FFN); 1 where attention and FFN
    #: run in parallel on one shared norm (Falcon-7B); 0 where the norms have no weights
    #: (OLMo's non-parametric LayerNorm)
    norms_per_layer: int = 2
    #: a norm on the word embeddings (BLOOM's word_embeddings_layernorm)
    embedding_norm: bool = False

    def __post_init__(self) -> None:
        for field in ("layers", "hidden", "heads", "vocab", "seq_len"):
            object.__setattr__(self, field, int(v.integer(field, getattr(self, field))))
        kv = self.heads if self.kv_heads is None else int(v.integer("kv_heads", self.kv_heads))
        v.divides("kv_heads", kv, "heads", self.heads)
        object.__setattr__(self, "kv_heads", kv)
        ffn = 4 * self.hidden if self.ffn_hidden is None else int(v.integer("ffn_hidden", self.ffn_hidden))
        object.__setattr__(self, "ffn_hidden", ffn)
        if self.head_dim is None:
            v.divides("heads", self.heads, "hidden", self.hidden)
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        else:
            object.__setattr__(self, "head_dim", int(v.integer("head_dim", self.head_dim)))
        v.choice("position_embedding", self.position_embedding, flops.POSITION_EMBEDDINGS)
        v.choice("norm", self.norm, flops.NORMS)
        v.choice("biases", self.biases, flops.BIAS_MODES)
        v.choice("attention", self.attention, moe.ATTENTIONS)
        v.choice("active_params_counts", self.active_params_counts, moe.ACTIVE_CONVENTIONS)
        object.__setattr__(self, "embedding_norm", bool(v.boolean("embedding_norm",
                                                                  self.embedding_norm)))
        for field in ("moe_experts", "moe_top_k", "moe_shared_ffn_hidden", "moe_dense_layers",
                      "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "mtp_layers",
                      "attention_window", "window_layers", "norms_per_layer"):
            object.__setattr__(self, field, int(v.integer(field, getattr(self, field), minimum=0)))
        object.__setattr__(self, "moe_layer_step", int(v.integer("moe_layer_step",
                                                                   self.moe_layer_step)))
        if self.moe_experts:
            k = int(v.integer("moe_top_k", self.moe_top_k))
            fe = self.ffn_hidden if self.moe_ffn_hidden is None else self.moe_ffn_hidden
            object.__setattr__(self, "moe_ffn_hidden", int(v.integer("moe_ffn_hidden", fe)))
            if k > self.moe_experts:
                raise v.InputError("moe_top_k", f"moe_top_k must be at most moe_experts "
                                                f"({self.moe_experts}), got {k}")
            moe.moe_layer_count(self.layers, self.moe_dense_layers, self.moe_layer_step)
        elif self.moe_top_k:
            raise v.InputError("moe_top_k", "moe_top_k needs moe_experts >= 1, got 0 experts")
        if self.attention == "mla":
            object.__setattr__(self, "kv_lora_rank", int(v.integer("kv_lora_rank",
                                                                    self.kv_lora_rank)))
        if self.window_layers > self.layers:
            raise v.InputError("window_layers", f"window_layers must be at most layers "
                                                f"({self.layers}), got {self.window_layers}")
        vd = self.head_dim if self.v_head_dim is None else int(v.integer("v_head_dim",
                                                                          self.v_head_dim))
        object.__setattr__(self, "v_head_dim", vd)

    # ---------------------------------------------------------------- MoE / MLA structure

    @property
    def is_moe(self) -> bool:
        return self.moe_experts > 0

    @property
    def _simple(self) -> bool:
        """A dense GQA model: the closed forms of :mod:`llmcost.training.flops` apply."""
        return not self.is_moe and self.attention == "gqa" and not self.qk_norm \
            and not self.attention_sinks and not (self.attention_window and self.window_layers)

    @property
    def moe_layers(self) -> int:
        """MoE layers [-] (:func:`llmcost.training.moe.moe_layer_count`); 0 when dense."""
        if not self.is_moe:
            return 0
        return int(moe.moe_layer_count(self.layers, self.moe_dense_layers, self.moe_layer_step))

    @property
    def attention_shape(self) -> tuple[int, int]:
        """(kv_heads, head_dim) that the activation and GEMM-shape formulas use: the model's
        own for GQA; for MLA every head keeps its own keys of d_n + d_r dims (the latent
        compression saves KV-cache at inference, not training activations), an
        approximation that counts values at the query/key width."""
        assert self.kv_heads is not None and self.head_dim is not None  # set in __post_init__
        if self.attention == "mla":
            return self.heads, self.qk_head_dim
        return self.kv_heads, self.head_dim

    @property
    def qk_head_dim(self) -> int:
        """Query/key dims per head that enter the scores [-] (MLA: d_n + d_r)."""
        assert self.head_dim is not None  # set in __post_init__
        return self.head_dim + (self.qk_rope_head_dim if self.attention == "mla" else 0)

    def _attention_params(self) -> int:
        """One layer's attention weights, biases and per-head norms/sinks [-]."""
        assert self.kv_heads is not None and self.head_dim is not None and self.v_head_dim is not None
        if self.attention == "mla":
            p = moe.mla_attention_params(self.hidden, self.heads, self.q_lora_rank,
                                         self.kv_lora_rank, self.head_dim,
                                         self.qk_rope_head_dim, self.v_head_dim)
        else:
            p = moe.gqa_attention_params(self.hidden, self.heads, self.kv_heads, self.head_dim,
                                         qkv_bias=self.biases in ("all", "qkv"),
                                         out_bias=self.biases == "all")
        return int(p) + (2 * self.head_dim if self.qk_norm else 0) + \
            (self.heads if self.attention_sinks else 0)

    @property
    def _layer_norms(self) -> int:
        """Norm parameters of one layer [-]."""
        return self.norms_per_layer * self._per_norm

    def _dense_ffn_params(self) -> tuple[int, int]:
        """(matmul weights, biases) of one dense FFN [-]."""
        assert self.ffn_hidden is not None  # set in __post_init__
        kg = 3 if self.gated_ffn else 2
        bias = ((kg - 1) * self.ffn_hidden + self.hidden) if self.biases == "all" else 0
        return kg * self.hidden * self.ffn_hidden, bias

    def _moe_ffn(self) -> tuple[int, int]:
        """(total, active) weights of one MoE FFN block [-]."""
        assert self.moe_ffn_hidden is not None  # set in __post_init__ for an MoE model
        t, a = moe.moe_ffn_params(self.hidden, self.moe_experts, self.moe_top_k,
                                  self.moe_ffn_hidden, self.moe_shared_ffn_hidden,
                                  self.gated_ffn, self.moe_expert_biases, self.moe_router_bias)
        return int(t), int(a)

    @property
    def _per_norm(self) -> int:
        return 2 * self.hidden if self.norm == "layernorm" else self.hidden

    @property
    def expert_params(self) -> int:
        """Routed-expert weights of the main model [-]: what expert parallelism shards."""
        if not self.is_moe:
            return 0
        assert self.moe_ffn_hidden is not None  # set in __post_init__ for an MoE model
        kg = 3 if self.gated_ffn else 2
        expert = kg * self.hidden * self.moe_ffn_hidden + (
            (kg - 1) * self.moe_ffn_hidden + self.hidden if self.moe_expert_biases else 0)
        return self.moe_layers * self.moe_experts * expert

    @property
    def active_expert_params(self) -> int:
        """Routed-expert weights one token meets [-] (k of E per MoE layer)."""
        if not self.is_moe:
            return 0
        return self.expert_params // self.moe_experts * self.moe_top_k

    def _general_params(self) -> tuple[int, int]:
        """(total, active with embedding and head) of the main model [-]."""
        L, Lm = self.layers, self.moe_layers
        attn = self._attention_params() + self._layer_norms
        mm, bias = self._dense_ffn_params()
        dense = (L - Lm) * (mm + bias)
        mt, ma = self._moe_ffn() if self.is_moe else (0, 0)
        vocab = self.embedding_params + self.vocab * self.hidden * (0 if self.tied_embeddings else 1)
        total = L * attn + dense + Lm * mt + self._per_norm + vocab
        active = L * attn + dense + Lm * ma + self._per_norm + vocab
        return total, active

    @property
    def shape(self) -> flops.ModelShape:
        """The dimensions the closed-form FLOP counts read (:func:`llmcost.training.flops.flops_per_token`)."""
        return flops.ModelShape(**{f.name: getattr(self, f.name) for f in fields(flops.ModelShape)})

    @property
    def params(self) -> int:
        """Total parameters of the main model [-] (:func:`llmcost.training.flops.parameter_count`
        for a dense GQA model; MoE, MLA, QK-norm and sinks by :mod:`llmcost.training.moe`).
        Multi-token-prediction modules are not included (:attr:`mtp_params`)."""
        if not self._simple:
            return self._general_params()[0]
        return flops.parameter_count(self)

    @property
    def active_params(self) -> int:
        """Parameters one token activates [-], counted as the model's publisher counts them
        (:attr:`active_params_counts`): all of a dense model's; an MoE model's attention,
        dense and shared FFNs, router, k of E routed experts, final norm and the output head,
        with the input embedding unless the convention is "head" (gpt-oss).
        DeepSeek-V3: 37.55e9 (published 37B); Mixtral 8x7B: 12.88e9 (12.9B)."""
        if not self.is_moe:
            return self.params
        active = self._general_params()[1]
        if self.active_params_counts == "head":
            active -= self.embedding_params
        return active

    @property
    def mtp_params(self) -> int:
        """Weights of the multi-token-prediction modules beyond the shared embedding and head
        [-]: per module one transformer block of the model's last kind (MoE when the model
        is), the 2h -> h projection and three norms. DeepSeek-V3: 11.6e9 (its report's 14B
        MTP module counts the embedding and head again)."""
        if not self.mtp_layers:
            return 0
        attn = self._attention_params() + 2 * self._per_norm
        ffn = self._moe_ffn()[0] if self.is_moe else sum(self._dense_ffn_params())
        return self.mtp_layers * (attn + ffn + 2 * self.hidden * self.hidden
                                  + 3 * self._per_norm)

    @property
    def embedding_params(self) -> int:
        """Input embedding (+ learned positions, + an embedding norm) parameters [-], held
        by the first stage."""
        pos = self.seq_len * self.hidden if self.position_embedding == "learned" else 0
        return self.vocab * self.hidden + pos + (self._per_norm if self.embedding_norm else 0)

    @property
    def output_params(self) -> int:
        """Output projection parameters [-] held by the last pipeline stage.

        With tied embeddings Megatron keeps a copy of the word embedding on the last stage
        (gradients all-reduced between the two), so the last stage holds V h either way.
        """
        return self.vocab * self.hidden

    @property
    def layer_params(self) -> int:
        """Parameters of one transformer layer [-] (weights, biases, norms); for an MoE model
        the mean over its layers, routed experts included."""
        if not self._simple:
            return int(round((self.params - self.embedding_params - self._per_norm
                              - self.vocab * self.hidden * (0 if self.tied_embeddings else 1))
                             / self.layers))
        body = self.params - self.embedding_params - self.vocab * self.hidden * (
            0 if self.tied_embeddings else 1)
        final_norm = 2 * self.hidden if self.norm == "layernorm" else self.hidden
        return (body - final_norm) // self.layers

    @property
    def expert_layer_params(self) -> float:
        """Routed-expert parameters per layer, the mean over layers [-] (sharded by EP)."""
        return self.expert_params / self.layers

    @property
    def active_matmul_params_per_layer(self) -> float:
        """Matmul weights one token meets per layer, the mean over layers [-]: attention
        projections, the dense FFN on dense layers, router + k experts + shared experts on
        MoE layers. Biases, norms and sinks are not matmuls."""
        if self._simple:
            return float(flops.matmul_params_per_layer(self.hidden, self.heads, self.kv_heads,
                                                       self.ffn_hidden, self.gated_ffn, self.head_dim))
        assert self.kv_heads is not None and self.head_dim is not None and self.v_head_dim is not None
        if self.attention == "mla":
            attn = moe.mla_attention_params(self.hidden, self.heads, self.q_lora_rank,
                                            self.kv_lora_rank, self.head_dim,
                                            self.qk_rope_head_dim, self.v_head_dim)
            attn -= self.q_lora_rank + self.kv_lora_rank     # the latent norms
        else:
            attn = moe.gqa_attention_params(self.hidden, self.heads, self.kv_heads,
                                            self.head_dim)
        mm, _ = self._dense_ffn_params()
        kg = 3 if self.gated_ffn else 2
        moe_mm = (self.hidden * self.moe_experts
                  + self.moe_top_k * kg * self.hidden * (self.moe_ffn_hidden or 0)
                  + kg * self.hidden * self.moe_shared_ffn_hidden) if self.is_moe else 0
        Lm = self.moe_layers
        return float(attn) + ((self.layers - Lm) * mm + Lm * moe_mm) / self.layers

    def flops_per_token(self, recompute: str = "none", seq_len: int | None = None) -> float:
        """Training FLOPs per token [FLOP] (:func:`llmcost.training.flops.flops_per_token`;
        MoE/MLA: 6 (l P_active + V h) + 6 l s a (d_qk + d_v), the same recomputation rules,
        :func:`llmcost.training.moe.attention_score_flops_per_token`)."""
        if not self._simple:
            rec = v.choice("recompute", recompute, flops.RECOMPUTE_MODES)
            s = self.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
            layer = 6.0 * self.layers * self.active_matmul_params_per_layer
            assert self.v_head_dim is not None  # set in __post_init__
            attn = float(moe.attention_score_flops_per_token(
                self.layers, s, self.heads, self.qk_head_dim, self.v_head_dim))
            if self.attention_window and self.window_layers:
                # windowed layers score min(w, s) keys per query instead of s
                keep = min(self.attention_window, s) / s
                attn *= 1.0 - self.window_layers / self.layers * (1.0 - keep)
            logits = 6.0 * self.vocab * self.hidden
            if rec == "full":
                return (layer + attn) * 4.0 / 3.0 + logits
            return layer + attn + logits + (attn if rec == "selective" else 0.0)
        return float(flops.flops_per_token(self.shape, self.seq_len if seq_len is None else seq_len,
                                           recompute))

    def with_(self, **changes: Any) -> "ModelSpec":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)

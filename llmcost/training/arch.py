"""A transformer architecture as one validated value, the unit the rest of llmcost passes around."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from .. import _validate as v
from . import flops


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

    def __post_init__(self):
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

    @property
    def shape(self) -> dict:
        """Keyword arguments shared by the FLOP and memory formulas."""
        return dict(hidden=self.hidden, heads=self.heads, kv_heads=self.kv_heads,
                    ffn_hidden=self.ffn_hidden, gated_ffn=self.gated_ffn,
                    head_dim=self.head_dim)

    @property
    def params(self) -> int:
        """Total parameters [-] (:func:`llmcost.training.flops.parameter_count`)."""
        return int(flops.parameter_count(
            self.layers, vocab=self.vocab, seq_len=self.seq_len,
            tied_embeddings=self.tied_embeddings, position_embedding=self.position_embedding,
            norm=self.norm, biases=self.biases, **self.shape))

    @property
    def embedding_params(self) -> int:
        """Input embedding (+ learned positions) parameters [-], held by the first stage."""
        pos = self.seq_len * self.hidden if self.position_embedding == "learned" else 0
        return self.vocab * self.hidden + pos

    @property
    def output_params(self) -> int:
        """Output projection parameters [-] held by the last pipeline stage.

        With tied embeddings Megatron keeps a copy of the word embedding on the last stage
        (gradients all-reduced between the two), so the last stage holds V h either way.
        """
        return self.vocab * self.hidden

    @property
    def layer_params(self) -> int:
        """Parameters of one transformer layer [-] (weights, biases, norms)."""
        body = self.params - self.embedding_params - self.vocab * self.hidden * (
            0 if self.tied_embeddings else 1)
        final_norm = 2 * self.hidden if self.norm == "layernorm" else self.hidden
        return (body - final_norm) // self.layers

    def flops_per_token(self, recompute="none", seq_len=None) -> float:
        """Training FLOPs per token [FLOP] (:func:`llmcost.training.flops.flops_per_token`)."""
        return float(flops.flops_per_token(self.layers, vocab=self.vocab,
                                           seq_len=self.seq_len if seq_len is None else seq_len,
                                           recompute=recompute, **self.shape))

    def with_(self, **changes) -> "ModelSpec":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)

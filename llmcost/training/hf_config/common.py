"""What the families' readers share: biases, sliding windows, dropout and the layers, widths,
heads and vocabulary of a Llama-like config."""

from __future__ import annotations

from typing import Mapping

from .fields import _error, _Fields

# ---------------------------------------------------------------------------- readers

def _biases(f: _Fields, attention_default: bool = False) -> str:
    """Llama-style ``attention_bias`` (q, k, v, o) and ``mlp_bias`` as ModelSpec.biases."""
    attn = f.get("attention_bias", attention_default)
    mlp = f.get("mlp_bias", False)
    if attn == mlp:
        return "all" if attn else "none"
    on = "attention_bias" if attn else "mlp_bias"
    raise _error(on, f"{on} true with {'mlp_bias' if attn else 'attention_bias'} false is not "
                     "modelled (biases are counted on all linear layers, on q/k/v only, or on none)")


def _windows(f: _Fields, layers: int, *, always: bool) -> tuple[int, int]:
    """(attention_window, window_layers): ``layer_types`` when given, else every layer
    (Mistral: ``always``) or the layers from ``max_window_layers`` on (Qwen2/3 with
    ``use_sliding_window``)."""
    window = f.get("sliding_window")
    types = f.get("layer_types")
    if types is not None:
        if len(types) != layers:
            raise _error("layer_types", f"layer_types has {len(types)} entries for "
                                        f"{layers} layers")
        n = sum(t == "sliding_attention" for t in types)
        return (int(window), n) if window and n else (0, 0)
    if not window:
        return 0, 0
    if always:
        return int(window), layers
    if not f.get("use_sliding_window", False):
        return 0, 0
    first = f.get("max_window_layers", layers)
    return int(window), max(0, layers - min(first, layers))


def _class_windows(f: _Fields, layers: int, *, default_window: int,
                   default_sliding: int) -> tuple[int, int]:
    """(attention_window, window_layers) for families whose configuration class builds
    ``layer_types`` itself (Gemma 2, Gemma 3, OLMo 3): the layers ``layer_types`` marks
    "sliding_attention" when the config gives it, else ``default_sliding`` layers (the
    class's pattern); the window ``sliding_window``, the class's ``default_window`` when the
    key is absent, none when it is null."""
    found, value = f._lookup("sliding_window")
    if found and value is None:
        window = f.get("sliding_window")        # an explicit null: full attention everywhere
    else:
        window = f.size("sliding_window", "attention_window", required=False,
                        default=default_window, limit="seq_len")
    types = f.get("layer_types")
    if types is not None:
        if len(types) != layers:
            raise _error(f.prefix + "layer_types", f"{f.prefix}layer_types has {len(types)} "
                                                   f"entries for {layers} layers")
        default_sliding = sum(t == "sliding_attention" for t in types)
    return (int(window), default_sliding) if window and default_sliding else (0, 0)


def _dropout(f: _Fields, *keys: str) -> bool:
    return any((f.get(k) or 0) > 0 for k in keys)


def _gqa_core(f: _Fields, *, head_dim_default: int | None = None, defaults: Mapping | None = None) -> dict:
    """Layers, widths, heads and vocabulary of a Llama-like config; ``defaults`` gives the
    class defaults of ``num_attention_heads``, ``num_key_value_heads`` and ``vocab_size``
    where a family's published files leave them out (Gemma 3), else they are required
    (``num_key_value_heads``: ``num_attention_heads``)."""
    d = defaults or {}
    layers = f.size("num_hidden_layers", "layers")
    hidden = f.size("hidden_size", "hidden")
    heads = f.size("num_attention_heads", "heads", required="num_attention_heads" not in d,
                   default=d.get("num_attention_heads"))
    kv = f.size("num_key_value_heads", "kv_heads", required=False,
                default=d.get("num_key_value_heads", heads), limit="num_attention_heads")
    hd = f.size("head_dim", "head_dim", required=False, default=head_dim_default)
    vocab = f.size("vocab_size", "vocab", required="vocab_size" not in d,
                   default=d.get("vocab_size"))
    return dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv, head_dim=hd,
                vocab=vocab, norm="rmsnorm", position_embedding="rope", gated_ffn=True)

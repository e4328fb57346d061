"""Models from a Hugging Face ``config.json``: the architecture fields read into a ModelSpec.

A config is data, never code: it is parsed as bounded JSON (:func:`read_config`), its
architecture is chosen by name from :data:`SUPPORTED`, and each family's reader maps the
fields its ``transformers`` class defines onto :class:`llmcost.training.arch.ModelSpec`, with
that class's defaults for absent fields. Any other decoder-only config is read generically from
the usual fields, with a warning naming each assumption (:mod:`llmcost.training.hf_generic`).
The fields a reader uses are recorded, so a link can carry them as ``cfg.<field>=value``
(:func:`config_fields`, :func:`fields_from_query`) and rebuild the same ModelSpec.

Family notes (parameter layout, from each model's published code and configuration class):

- Llama 1-3, Mistral, Mixtral, Qwen2/2.5, Qwen3, Qwen3-MoE, SmolLM3: pre-norm RMSNorm,
  SwiGLU, rotary positions (SmolLM3 leaves every 4th layer without them: no parameters
  either way). Qwen2 biases q, k and v; Qwen3 adds per-head RMSNorm on q and k.
- DeepSeek-V2/V3: multi-head latent attention, ``first_k_dense_replace`` dense layers then
  MoE layers of shared + routed experts; V3's ``noaux_tc`` routing keeps one balancing
  bias per routed expert; ``num_nextn_predict_layers`` multi-token-prediction modules are
  reported apart (:attr:`ModelSpec.mtp_params`), not in ``params``.
- gpt-oss: biases on attention, router and experts, one sink logit per head, 128-token
  sliding windows on the ``layer_types`` marked so; published active counts include the
  output head but not the input embedding.
- Falcon: fused QKV with 1 KV head (``multi_query``, 7B) or ``num_kv_heads`` groups
  (``new_decoder_architecture``, 40B/180B); parallel attention and MLP reading one shared
  LayerNorm (7B) or two (new architecture); GELU MLP of 4h; ALiBi when ``alibi``; the
  original ``RWForCausalLM`` files (``model_type`` RefinedWebModel = 7B layout, RefinedWeb
  = new architecture, keys ``n_head``/``n_head_kv``/``n_layer``) read the same way.
- MPT: ALiBi (no position parameters), ``no_bias`` removes every bias including the
  LayerNorms', GELU MLP of ``expansion_ratio`` x d_model, tied embeddings.
- BLOOM: ALiBi, biases everywhere, GELU MLP of 4h, a LayerNorm on the word embeddings.
- GPTBigCode (SantaCoder, StarCoder/StarCoderBase, WizardCoder): GPT-2 with multi-query
  attention (``multi_query``: 1 KV head, else ``n_head``), GELU MLP of ``n_inner`` (None:
  4h), biases everywhere, LayerNorm, learned positions, lm_head tied to wte; ``hidden_size``,
  ``num_attention_heads``, ``num_hidden_layers``, ``max_position_embeddings`` are read as
  ``n_embd``, ``n_head``, ``n_layer``, ``n_positions``. ModelSpec counts the position table
  at the sequence length, s x h: the n_positions x h table when seq_len is left to its
  default (n_positions up to 8,192), short of it by (n_positions - s) h for a shorter
  seq_len (StarCoder at 4,096: 25e6 of 15.5e9, 0.16%).
- StarCoder2: GQA with RoPE, GELU MLP (c_fc, c_proj), LayerNorm, ``use_bias`` on every
  linear layer (the LayerNorms keep theirs either way), ``sliding_window`` on every layer,
  ``tie_word_embeddings`` per config (default true; 15B unties).
- GPT-NeoX (Pythia, GPT-NeoX-20B): fused QKV and a GELU MLP, all with biases, two
  LayerNorms per layer, rotary positions on ``rotary_pct`` of each head (no parameters; 0:
  none), untied embed_in/embed_out by default. ``use_parallel_residual`` (attention and MLP
  side by side, each with its own LayerNorm, the GPT-J residual) is read but changes no
  parameter or FLOP count, so ModelSpec has no field for it (Falcon-7B's parallel layout shows
  only as its one shared norm, ``norms_per_layer`` 1).
- OLMo: Llama's SwiGLU, RoPE and bias-free linears with non-parametric LayerNorms, so no
  norm parameters in the layers (``norms_per_layer`` 0); ModelSpec still counts a final norm
  of h (4,096 of OLMo-7B's 6.9e9).
- OLMo 2: RMSNorm after attention and after the MLP (two per layer, as pre-norm counts),
  RMSNorm over the projected q (a x d) and k (kv x d), counted as ModelSpec's per-head
  ``qk_norm`` (2 d per layer): (a + kv - 2) d fewer per layer, 253,952 of OLMo 2 7B's
  7,298,617,344 (0.003%).
- OLMo 3: OLMo 2's layout (the same q/k-norm approximation: 253,952 of Olmo 3 7B's
  7,298,011,136) plus sliding windows of ``sliding_window`` (Olmo3Config: 4096) on the
  layers ``layer_types`` marks ``sliding_attention``, by default all but every 4th.
- Gemma 2: GQA with ``head_dim`` apart from h / a (9B: 16 x 256 on h = 3584), GeGLU MLP
  (gate, up, down: SwiGLU's count), four RMSNorms per layer (input, post-attention,
  pre- and post-feedforward: ``norms_per_layer`` 4), embeddings tied by default and scaled
  by sqrt(h) (a buffer, no parameter), no biases (``attention_bias`` true is refused);
  windows of ``sliding_window`` (4096) on the even layers (``layer_types`` when given).
  Logit soft-capping (``attn_logit_softcapping``, ``final_logit_softcapping``: a tanh per
  score and per logit) and ``query_pre_attn_scalar`` (the score scale) change no parameter
  and no FLOP count worth modelling, so they are not read.
- Gemma 3: Gemma 2's layout plus an RMSNorm over head_dim on q and on k (ModelSpec's
  ``qk_norm``, exactly), full attention on every ``sliding_window_pattern``-th layer (6:
  five local layers of ``sliding_window`` tokens, 1024 in 4B-27B and 512 in 1B, per global
  one) or as ``layer_types`` says. ``Gemma3ForConditionalGeneration`` (model_type gemma3)
  holds the language model under ``text_config`` and is read from there (fields
  ``text_config.<field>``), with a warning that its SigLIP vision tower and multimodal
  projector (423e6 of gemma-3-27b-it's 27.43e9) are not counted; its sparse ``text_config``
  takes Gemma3TextConfig's defaults (vocab 262,208, 8 heads, 4 KV heads, head_dim 256).
- Phi-3, Phi-3.5, Phi-4 (``Phi3ForCausalLM``): Llama's layout with q, k, v fused in
  ``qkv_proj`` and gate and up in ``gate_up_proj`` (the same weights as separate ones), no
  biases (the code builds none; ``attention_bias`` is not read), untied embeddings by
  default; ``sliding_window`` (Phi-3-mini-4k: 2047) applies to every layer, as Phi3Model's
  Mistral mask does, and a window longer than the sequence (Phi-3.5's 262,144) changes
  nothing.

References
----------
1. Hugging Face transformers, ``configuration_<model>.py`` and ``modeling_<model>.py``
   of llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v3, gpt_oss, falcon, mpt,
   bloom, smollm3, gpt_bigcode, starcoder2, gpt_neox, olmo, olmo2, olmo3, gemma2, gemma3,
   phi3 (https://github.com/huggingface/transformers): field names, defaults, the default
   ``layer_types`` patterns.
2. DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §2.1-2.2, §4.2.
3. OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card", arXiv:2508.10925, §2.
4. E. Almazrouei et al., "The Falcon Series of Open Language Models",
   arXiv:2311.16867, §4 (multigroup attention, parallel attention/MLP).
5. MosaicML, MPT-7B (https://huggingface.co/mosaicml/mpt-7b, 2023-05): ALiBi, no biases.
6. BigScience, "BLOOM", arXiv:2211.05100, §3.2 (ALiBi, embedding LayerNorm).
7. R. Li et al., "StarCoder: may the source be with you!", arXiv:2305.06161 (15.5B,
   multi-query attention, 8K context); L. Ben Allal et al., "SantaCoder: don't reach for the
   stars!", arXiv:2301.03988.
8. A. Lozhkov et al., "StarCoder 2 and The Stack v2: The Next Generation", arXiv:2402.19173.
9. S. Black et al., "GPT-NeoX-20B", arXiv:2204.06745; S. Biderman et al., "Pythia",
   arXiv:2304.01373, Table 1 (non-embedding parameter counts).
10. D. Groeneveld et al., "OLMo", arXiv:2402.00838; Team OLMo, "2 OLMo 2 Furious",
    arXiv:2501.00656 (post-norm RMSNorm, QK-norm); Team OLMo, "Olmo 3", 2025 (sliding-window
    attention on three of four layers).
11. Gemma Team, "Gemma 2: Improving Open Language Models at a Practical Size",
    arXiv:2408.00118, §2 (local/global alternation, logit soft-capping, post-norms);
    Gemma Team, "Gemma 3 Technical Report", arXiv:2503.19786, §2 (5:1 local:global,
    1024-token windows, QK-norm, Table 1 parameter counts).
12. M. Abdin et al., "Phi-3 Technical Report", arXiv:2404.14219; M. Abdin et al., "Phi-4
    Technical Report", arXiv:2412.08905.
"""

from .fields import FIELD_KINDS, SUPPORTED
from .fields import _Fields as _Fields  # the reader's field access hf_generic.read takes
from .model import DEFAULT_SEQ_CAP, config_fields, config_label, file_config_fields, model_from_config
from .query import fields_from_query
from .reading import MAX_CONFIG_BYTES, MAX_DEPTH, read_config, read_config_file

__all__ = ["MAX_CONFIG_BYTES", "MAX_DEPTH", "DEFAULT_SEQ_CAP", "SUPPORTED", "FIELD_KINDS",
           "read_config", "read_config_file", "model_from_config", "config_label",
           "file_config_fields", "config_fields", "fields_from_query"]

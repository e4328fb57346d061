"""Training stacks: the one list the step model, the memory model, the planner, the review,
the forecast's groups, the command line and the apps read.

A stack is the software a team trains with. It decides which kernels run (fused Transformer
Engine layers or eager PyTorch), whether tensor-parallel collectives can hide behind GEMMs,
how parameters, gradients and optimizer states are held, which loss holds the logits, and the
layouts its teams run. Each stack's constants are fitted only on its own authors' published
throughput (:func:`llmcost.training.step.calibration_for`).

References
----------
1. NVIDIA Megatron-LM / Megatron-Core, NeMo and Megatron-Bridge (Transformer Engine).
2. PyTorch FSDP2: pytorch/torchtitan; MosaicML llm-foundry; allenai/OLMo-core.
3. microsoft/Megatron-DeepSpeed; EleutherAI/gpt-neox (DeepSpeed ZeRO beside Megatron's model
   code and its TP/PP).
4. huggingface/nanotron (the Ultra-Scale Playbook's stack: TP, PP, DP with ZeRO-1).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stack:
    """One training stack and what the models read of it."""

    #: the name a reviewer gives (``stack=``)
    name: str
    #: the software, in words
    label: str
    #: how memory is held (:func:`llmcost.training.memory.memory_per_gpu` ``stack``):
    #: "megatron" (distributed optimizer / ZeRO-1 beside TP and PP) or "fsdp" (FSDP2 keeps
    #: a pipeline stage gathered and accumulates unsharded gradients)
    memory: str
    #: the loss's usual implementation (:data:`llmcost.training.memory.LOSS_BYTES`)
    loss: str
    #: tensor-parallel collectives can hide behind GEMMs (Transformer Engine userbuffers)
    tp_comm_overlap: bool
    #: the layouts its teams run: "3d" (TP, PP, CP, EP beside data parallelism) or "fsdp"
    #: (sharded data parallelism, TP at most inside a node, no pipeline)
    space: str
    #: the published throughput its step-model constants are fitted on, by its own authors
    #: (:func:`llmcost.training.step.calibration_for`); "": none, the step model runs
    #: Megatron-Core's constants without TP overlap and the review gives the widest band
    calibrated_on: str = ""
    #: the largest error of its step throughput on a source held out of its fit [-]: the
    #: review's band on this stack is never narrower (0 for the stacks whose GPU groups'
    #: own bands, in data/step_model_errors.csv, are measured on their rows)
    held_out_error: float = 0.0


#: Every training stack, by name: the one list (the default first).
STACKS = {
    "megatron": Stack(
        "megatron", "Megatron-Core (Megatron-LM, NeMo, Megatron-Bridge) with Transformer Engine",
        memory="megatron", loss="fused", tp_comm_overlap=True, space="3d",
        calibrated_on="Narayanan et al. 2021 Table 1, Llama 3 Table 4, NVIDIA Megatron-Bridge"),
    "fsdp": Stack(
        "fsdp", "PyTorch FSDP/FSDP2 in eager mode (torchtitan, llm-foundry, OLMo-core)",
        memory="fsdp", loss="fp32", tp_comm_overlap=False, space="fsdp",
        calibrated_on="MosaicML llm-foundry's benchmark tables"),
    "deepspeed": Stack(
        "deepspeed", "DeepSpeed with Megatron's model code (Megatron-DeepSpeed, GPT-NeoX)",
        memory="megatron", loss="fused", tp_comm_overlap=False, space="3d",
        calibrated_on="BigScience's Megatron-DeepSpeed runs (BLOOM) and MT-NLG 530B "
                      "(data/stack_runs.csv)", held_out_error=0.304),
    "nanotron": Stack(
        "nanotron", "Hugging Face nanotron (TP, PP and ZeRO-1 data parallelism)",
        memory="megatron", loss="fused", tp_comm_overlap=False, space="3d",
        calibrated_on="the Ultra-Scale Playbook's nanotron benchmark (data/stack_runs.csv)",
        held_out_error=0.216),
}
#: the stack names, in :data:`STACKS` order
NAMES = tuple(STACKS)
#: the stack a 2025-26 team pre-training at scale runs when the review is not told:
#: Megatron-Core (NeMo / Megatron-Bridge recipes; the class of Llama 3's and DeepSeek-V3's
#: in-house 4D stacks: TP, PP, CP and EP beside sharded data parallelism)
DEFAULT = "megatron"


def stack(name: str) -> Stack:
    """The stack named ``name`` (a key of :data:`STACKS`); checked by the caller."""
    return STACKS[str(name)]


def help_text() -> str:
    """The stacks in one line, for a flag's help."""
    return "; ".join(f"{s.name}: {s.label}" for s in STACKS.values())


def calibration_note(name: str) -> str:
    """Why a stack's step-model constants are not its own: "" for a stack its own authors'
    published throughput calibrates (:attr:`Stack.calibrated_on`)."""
    if stack(name).calibrated_on:
        return ""
    return (f"no published throughput of the {name} stack calibrates it: Megatron-Core's "
            "constants without TP overlap")

"""Hardware descriptions used by the step-time model: plain values, no catalog access."""

from __future__ import annotations

from dataclasses import dataclass

from .. import _validate as v

#: the scale-out fabric a GPU generation usually ships with, for a GPU whose catalog row does
#: not name its own (``GPUSpec.scale_out``): DGX/HGX reference designs for NVIDIA (DGX A100:
#: HDR 200 Gb/s per GPU; DGX H100, B200: NDR 400 Gb/s); 400 Gb/s RoCE for AMD Instinct
#: platforms, 200 Gb/s RoCE for PCIe inference cards (assumptions)
USUAL_SCALE_OUT = {"ampere": "ib-hdr", "hopper": "ib-ndr", "blackwell": "ib-ndr",
                   "cdna3": "roce-400", "ada": "roce-200"}


@dataclass(frozen=True, kw_only=True)
class GPUSpec:
    """One accelerator. FLOP/s are dense tensor-core peaks; memory in GiB (2**30 bytes)."""

    id: str
    name: str
    generation: str
    # ---- memory
    memory_gib: float
    hbm_bandwidth_tb_per_s: float
    # ---- compute
    bf16_dense_tflops: float
    fp8_dense_tflops: float | None
    #: softmax exponentials per second of the special function units (MUFU.EX2) [1/s]:
    #: SMs x exponentials per SM per clock x boost clock; None: unknown, attention is then
    #: bounded by its matmuls alone (:func:`llmcost.training.attention.flash_attention_time_s`).
    exp_per_s: float | None = None
    # ---- fabrics
    scale_up: str
    scale_up_bandwidth_gb_per_s: float
    #: GPUs in one scale-up (NVLink) domain [-]: 8 in an HGX/DGX node, 72 in a GB200/GB300
    #: NVL72 rack; None: the node (``gpus_per_node``). Separate from the billing and failure
    #: unit: a GB200 compute tray of 4 GPUs sits in a 72-GPU NVLink domain.
    scale_up_domain_gpus: int | None = None
    #: id of the scale-out fabric a system of this GPU ships with (DGX A100: HDR InfiniBand,
    #: DGX H100 and B200: NDR); None: the generation's (:data:`USUAL_SCALE_OUT`).
    scale_out: str | None = None
    # ---- the node and the system it ships in: power and price
    gpus_per_node: int
    tdp_w: float
    #: GPUs in the system the GPU ships in [-] (8 for a DGX, 72 for a GB200 NVL72 rack).
    system_gpus: int | None = None
    #: power of that system at full load [kW] (e.g. DGX H100 10.2 kW); None
    #: when unknown. ``system_power_note`` says whether it is a datasheet figure or an estimate.
    system_power_kw: float | None = None
    system_power_note: str | None = None
    #: price of that system [USD]; None when no price is cited.
    capex_usd_per_system: float | None = None

    @property
    def usual_scale_out(self) -> str:
        """The scale-out fabric id a system of this GPU usually ships with: its own
        (``scale_out``), else its generation's reference design (:data:`USUAL_SCALE_OUT`),
        else NDR InfiniBand."""
        return self.scale_out or USUAL_SCALE_OUT.get(self.generation, "ib-ndr")

    def scale_out_id(self, fabric: str = "auto") -> str:
        """The scale-out fabric id a scenario's ``fabric`` names on this GPU: "auto" is
        :attr:`usual_scale_out`, any other id is itself."""
        return self.usual_scale_out if fabric == "auto" else fabric

    @property
    def scale_up_domain(self) -> int:
        """GPUs reachable over the scale-up fabric [-]."""
        return int(self.scale_up_domain_gpus or self.gpus_per_node)

    @property
    def power_w_per_gpu(self) -> float | None:
        """System power per GPU [W] (system power / GPUs in it), None if unknown."""
        if self.system_power_kw is None or not self.system_gpus:
            return None
        return self.system_power_kw * 1000 / self.system_gpus

    @property
    def capex_usd_per_gpu(self) -> float | None:
        """System price per GPU [USD], None if no price is cited."""
        if self.capex_usd_per_system is None or not self.system_gpus:
            return None
        return self.capex_usd_per_system / self.system_gpus

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * 2**30

    def peak_tflops(self, precision: str = "bf16") -> float:
        """Dense peak [TFLOP/s] for ``precision`` ("bf16"/"fp16", "fp8" or "mxfp8"; MXFP8 runs
        at the FP8 dense rate: :func:`llmcost.training.precision.peak_tflops_by_part`)."""
        v.choice("precision", precision, ("bf16", "fp16", "fp8", "mxfp8"))
        if precision in ("fp8", "mxfp8"):
            if self.fp8_dense_tflops is None:
                raise v.InputError("precision", f"precision {precision!r} is not supported by {self.id}")
            return self.fp8_dense_tflops
        return self.bf16_dense_tflops


@dataclass(frozen=True, kw_only=True)
class FabricSpec:
    """A link technology; bandwidth per GPU per direction in GB/s (1e9 bytes/s)."""

    id: str
    name: str
    kind: str
    #: link family as data/fabrics.csv spells it ("infiniband", "roce", "efa", "nvlink", ...);
    #: None when unknown. No formula reads it: each fabric's constants carry its behaviour.
    technology: str | None = None
    bandwidth_gb_per_s_per_gpu: float
    latency_us: float
    #: achievable share of the link bandwidth in collectives (NCCL bus bandwidth / link rate)
    efficiency: float = 1.0
    oversubscription: float = 1.0
    #: bandwidth loss per doubling of nodes (see comm.congestion_factor)
    congestion_per_doubling: float = 0.0
    #: the terms of this row that are assumptions, not measurements (data/fabrics.csv
    #: ``assumed``): the review shows how far they move the step time
    assumed: tuple = ()


@dataclass(frozen=True)
class Hardware:
    """The hardware a training step runs on: the GPU, the fabric inside a scale-up domain
    (NVLink, PCIe) and the one between them (InfiniBand, RoCE)."""

    gpu: GPUSpec
    scale_up: FabricSpec
    scale_out: FabricSpec

    def __post_init__(self) -> None:
        for name, kind in (("gpu", GPUSpec), ("scale_up", FabricSpec), ("scale_out", FabricSpec)):
            if not isinstance(getattr(self, name), kind):
                raise v.InputError(name, f"{name} must be a {kind.__name__}, got "
                                         f"{type(getattr(self, name)).__name__}")

"""Failures and checkpoints: job failure rate, checkpoint size and stall, optimal interval,
goodput, the work one interruption (failure or spot preemption) costs, and the restart after
it as named terms (detection, rescheduling, checkpoint load, warm-up: :func:`.restart_terms`).

The formulas live in modules by topic: failure rates per 1000 GPU-days (:mod:`.failures`),
checkpoints and their interval (:mod:`.checkpoints`), goodput (:mod:`.wall_time`) and the
restart (:mod:`.restart`); every name is re-exported here.

Each module cites its sources.
"""

from .checkpoints import (
    CHECKPOINT_BYTES_PER_PARAM,
    NODE_NETWORK_GB_PER_S,
    STORAGE_GB_PER_S_PER_NODE,
    CheckpointStorage,
    checkpoint_size_bytes,
    checkpoint_stall_s,
    daly_interval_s,
    shared_tier_gb_per_s,
    storage_bandwidth_for_stall_gb_per_s,
    young_interval_s,
)
from .failures import (
    FALLBACK_GENERATION,
    KOKOLIS_GPUS_PER_NODE,
    NODE_FAILURES_PER_1000_NODE_DAYS,
    FailureRate,
    default_failure_rate,
    failure_rate,
    gpu_rate_from_node_rate,
    job_failures_per_day,
    mtbf_h,
)
from .restart import (
    DATALOADER_S,
    DEFAULT_DETECTOR,
    DEFAULT_RESCHEDULE,
    DETECTORS,
    HANG_SHARE,
    INIT_S_PER_RANK,
    LOCALIZE_S,
    RESCHEDULE_FITS,
    RestartPolicy,
    RestartTerms,
    checkpoint_load_s,
    detection_s,
    reschedule_s,
    restart_terms,
    restart_time_s,
    warmup_s,
)
from .wall_time import (
    SECONDS_PER_DAY,
    GoodputBreakdown,
    days_to_train,
    goodput,
    goodput_breakdown,
    lost_hours_per_interruption,
)

__all__ = [
    "CHECKPOINT_BYTES_PER_PARAM", "DATALOADER_S", "DEFAULT_DETECTOR", "DEFAULT_RESCHEDULE",
    "DETECTORS", "FALLBACK_GENERATION", "HANG_SHARE", "INIT_S_PER_RANK", "KOKOLIS_GPUS_PER_NODE",
    "LOCALIZE_S", "NODE_FAILURES_PER_1000_NODE_DAYS", "NODE_NETWORK_GB_PER_S",
    "RESCHEDULE_FITS", "SECONDS_PER_DAY", "STORAGE_GB_PER_S_PER_NODE", "CheckpointStorage", "FailureRate",
    "GoodputBreakdown", "RestartPolicy", "RestartTerms", "checkpoint_load_s",
    "checkpoint_size_bytes", "checkpoint_stall_s",
    "daly_interval_s", "days_to_train", "default_failure_rate", "detection_s", "failure_rate", "goodput",
    "goodput_breakdown", "gpu_rate_from_node_rate", "job_failures_per_day",
    "lost_hours_per_interruption", "mtbf_h", "reschedule_s", "restart_terms", "restart_time_s",
    "shared_tier_gb_per_s", "storage_bandwidth_for_stall_gb_per_s", "warmup_s",
    "young_interval_s",
]

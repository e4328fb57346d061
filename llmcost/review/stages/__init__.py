"""The stages of the review chain, each a small function of the Scenario's inputs and the
results of earlier stages (pvlib's ModelChain is the model: named stages, typed results,
each stage replaceable).

    resolve -> size (only when sizing by days) -> plan -> predict -> reliability -> economics

One module per stage: ``inputs`` (resolve), ``planning`` (size and plan), ``prediction``
(predict), ``interruptions`` (reliability), ``costs`` (economics) and ``checks`` (the flags
and warnings), beside ``space`` (the search space and options every stage shares) and
``notes`` (the notes' sentences). Every name is re-exported here.
"""

from .checks import (  # noqa: F401
    COST_BOUND_USD,
    GOODPUT_FLOOR,
    SEVERITY,
    _put,
    flags_and_warnings,
)
from .costs import (  # noqa: F401
    HOURS_PER_YEAR,
    economics,
    spot_summary,
)
from .inputs import (  # noqa: F401
    _CUSTOM_CLOUD,
    _catalog_prices,
    _custom_prices,
    _entered,
    _failure_rate,
    _onprem,
    _with_seq_len,
    model_of,
    offer_fabric_of,
    offers_of,
    other_opex_usd_per_gpu_month,
    provider_of,
    realized_ratio_for,
    resolve,
    splittable_sequences,
    spot_capacity_of,
)
from .interruptions import (  # noqa: F401
    NODE_NETWORK_GB_PER_S,
    InterruptionTerms,
    _reliability_at,
    checkpoint_goodput_at,
    data_read_at,
    data_stall_at,
    interruption_terms,
    mode_goodput,
    reliability,
    restart_terms_at,
)
from .notes import (  # noqa: F401
    _LEADING_TOKENS,
    _TERM_WORDS,
    A2A_NOTE_SHARE,
    NAPKIN_FACTOR_LABELS,
    a2a_note,
    as_typed,
    batch_note,
    fabric_assumption_note,
    napkin_note,
)
from .planning import (  # noqa: F401
    _BEST,
    _BEST_SIZE,
    FILL_CAP_TOKENS,
    LINK_KEY_OF,
    _batch_units,
    _bests,
    _law_batch_reason,
    _review_plan,
    _size_at,
    _sized_batch,
    _sized_gpus,
    _splits_any,
    _splittable_batch,
    batch_fill_at,
    batch_sequences,
    given_layout_error,
    law_batch,
    near_batch,
    plan,
    review_plan,
    run_batch,
    size,
    splittable_batch,
)
from .prediction import (  # noqa: F401
    BANDWIDTH_TERMS,
    PhysicalBoundError,
    g_peak_ratio,
    mfu_limit,
    mfu_shares,
    precision_utilization,
    predict,
)
from .space import (  # noqa: F401
    FSDP_MICRO_BATCHES,
    MEMORY_MARGIN,
    MIN_CP_SEQ_LEN,
    REVIEW_MEMORY,
    REVIEW_SPACE,
    SIMPLEST_WITHIN,
    STAGE_SPLIT,
    STEP_OPTIONS,
    a2a_overlap,
    check_given_layout,
    given_layout,
    given_layout_text,
    options_for,
    recompute_recipes,
    review_space,
    stack_of,
)

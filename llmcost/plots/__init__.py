"""Results -> plotly Figures. No widgets here, no formulas: every number comes from review.

Every figure function that takes a :class:`~llmcost.review.Results` also takes
``compare=()``: a sequence of ``(label, Results)`` of other pinned scenarios, overlaid on the
current one (``label``, "current" by default when there is something to compare with). Curves
get one trace per scenario (the same colour, a dash per scenario, "A: ..." in the legend);
bar charts group their bars by scenario; maps, heatmaps and tables that cannot overlay mark
the other scenarios' points or stay single. With ``compare=()`` a figure shows the current
scenario alone.

One module per app (``review``, ``sizing``, ``tco`` with spot, ``checkpoints`` with storage,
``utilization``, ``serving``, ``offers``), beside the figure helpers they share (``base``)
and tables as figures (``tables``). Every name is re-exported here.
"""

from .base import (  # noqa: F401
    DASHES,
    LABEL_BOX,
    SCENARIO_COLOURS,
    SYMBOLS,
    TEMPLATE,
    TITLE_CHARS,
    TRACE_TYPES,
    USD_AXIS,
    _empty,
    _fig,
    _lean_template,
    _legend_below,
    _named,
    _nice_step,
    _pow2_ticks,
    _runs,
    _tint,
    _title,
    _wrap,
    _wrap_label,
    _zero_axes,
)
from .checkpoints import (  # noqa: F401
    MODE_COLOURS,
    goodput_curve,
    notice_table,
    storage_tiers_table,
)
from .offers import (  # noqa: F401
    OFFER_COLOURS,
    offers_cost_days,
)
from .review import (  # noqa: F401
    cost_by_option,
    waterfall,
)
from .serving import (  # noqa: F401
    serving_cost,
    serving_memory,
    serving_pareto,
)
from .sizing import (  # noqa: F401
    MEMORY_COLOURS,
    _colour_map,
    _log_range,
    _memory_frame,
    _sizing_bar,
    ladder_table,
    measured_scaling,
    memory_stack,
    scaling,
    sizing_curve,
)
from .tables import (  # noqa: F401
    TABLE_CHAR_PX,
    TABLE_LINE_PX,
    TABLE_MIN_PX,
    TABLE_PAD_PX,
    _cell,
    _fit_table,
    _lines,
    frame_table,
)
from .tco import (  # noqa: F401
    OPTION_COLOURS,
    _view,
    decision_map,
    spot_heatmap,
    spot_monte_carlo,
    tco_curves,
    tornado,
)
from .utilization import (  # noqa: F401
    cluster_busbw,
    cluster_steps,
    utilization_vs_published,
)

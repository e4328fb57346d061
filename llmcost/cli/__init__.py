"""The ``llmcost`` command line.

Each subcommand computes a dict of results; ``--json`` prints exactly that dict as one JSON
object, otherwise a readable table. Bad input prints one line naming the parameter on stderr
and exits with status 2 (argparse's own errors included).

One module per subcommand holds its flags, the function that answers it and its text view;
``parser`` gathers them, ``flags`` refuses a flag the call would ignore, ``run`` is ``main``.
"""

from .breakeven import cmd_breakeven
from .check import cmd_check
from .checkpoint import cmd_checkpoint
from .common import MOE_ONLY, MOE_OVERLAP_DEFAULT
from .compare import cmd_compare
from .flags import IGNORED_WITH, NEEDS, NEGATIVE_OK
from .flops import cmd_flops
from .ladder import cmd_ladder
from .listing import LIST_TEXT_COLUMNS, cmd_list
from .memory import cmd_memory
from .mfu import cmd_mfu
from .parser import build_parser
from .plan import PLAN_MAX_TOP, cmd_plan
from .predict import cmd_predict
from .review import cmd_review
from .run import main
from .serve import cmd_serve
from .size import cmd_size
from .spot import cmd_spot
from .storage import cmd_storage

__all__ = ["main", "build_parser", "cmd_flops", "cmd_mfu", "cmd_memory", "cmd_predict",
           "cmd_plan", "cmd_breakeven", "cmd_spot", "cmd_checkpoint", "cmd_size", "cmd_ladder",
           "cmd_review", "cmd_storage", "cmd_serve", "cmd_compare", "cmd_check", "cmd_list",
           "LIST_TEXT_COLUMNS", "PLAN_MAX_TOP", "IGNORED_WITH", "NEEDS", "MOE_ONLY", "NEGATIVE_OK",
           "MOE_OVERLAP_DEFAULT"]

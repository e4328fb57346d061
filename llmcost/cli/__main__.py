"""``python -m llmcost.cli``: the ``llmcost`` command."""

import sys

from .run import main

sys.exit(main())

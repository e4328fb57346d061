"""llmcost: numbers for an LLM training-infrastructure architecture review.

Layers, lowest first: ``catalog`` (data) -> ``training`` and ``economics`` (pure, vectorized
formulas) -> ``utilization`` -> ``cli``. Nothing here imports widgets or plotting.
"""

from ._validate import InputError

__version__ = "0.1.0"
__all__ = ["InputError", "__version__"]

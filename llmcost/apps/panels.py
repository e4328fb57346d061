"""The apps by their earlier names (each lives in its own ``*_app`` module now); the
functions build and display one, as the notebooks of earlier versions call them."""

from .base import ReviewPanel, run_app  # noqa: F401
from .checkpoints_app import CheckpointApp
from .review_app import ReviewApp
from .sizing_app import SizingApp
from .spot_app import SpotApp
from .tco_app import TcoApp
from .utilization_app import UtilizationApp


def review():
    return run_app(ReviewApp)


def utilization():
    return run_app(UtilizationApp)


def rent_vs_buy():
    return run_app(TcoApp)


def spot():
    return run_app(SpotApp)


def sizing():
    return run_app(SizingApp)


def checkpoints():
    return run_app(CheckpointApp)

"""Spec types, score results, normalization, calibration and discovery."""

from rebench.core.calibration import resolve_anchors
from rebench.core.discovery import all_specs, environment_ids, load_spec
from rebench.core.errors import RebenchError
from rebench.core.normalize import Anchors, AnchorSource, aggregate, normalize
from rebench.core.score import ScoreResult
from rebench.core.spec import Aggregation, Direction, EnvironmentSpec, Profile, SolutionRecipe

__all__ = [
    "Aggregation",
    "AnchorSource",
    "Anchors",
    "Direction",
    "EnvironmentSpec",
    "Profile",
    "RebenchError",
    "ScoreResult",
    "SolutionRecipe",
    "aggregate",
    "all_specs",
    "environment_ids",
    "load_spec",
    "normalize",
    "resolve_anchors",
]

"""The scenario language: load a YAML/JSON story, step it through an adapter, check `expect`.

See :mod:`.loader` (the file format, line-numbered errors), :mod:`.runner` (stepping, verdicts),
:mod:`.expect` (observations, not-applicable handling) and :mod:`.annotate` (self-checking
counterexamples from the claimed profile's model).
"""

from __future__ import annotations

from .annotate import COMPARED, ModelRejected, annotate
from .loader import Scenario, ScenarioError, ScenarioStep, from_data, load, parse
from .runner import EXIT_CODES, Outcome, run_scenario

__all__ = ["COMPARED", "EXIT_CODES", "ModelRejected", "Outcome", "Scenario", "ScenarioError", "ScenarioStep",
           "annotate", "from_data", "load", "parse", "run_scenario"]

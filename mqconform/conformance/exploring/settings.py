"""Hypothesis settings profiles registered by the suite: dev, ci (deterministic), thorough.

`ci` replaces Hypothesis' own `ci` profile: derandomized and bounded so CI is reproducible and fits
its budget. The profile is chosen by --settings, else MQCONFORM_SETTINGS, else `ci` when CI=true,
else `dev`. Every profile states `derandomize`: a profile registered without it would inherit it
from Hypothesis' default, which is derandomized whenever CI=true, so `dev` would silently stop
drawing seeds in CI.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

SUPPRESSED = (HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large)
PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)

PROFILES = {
    "dev": {"max_examples": 60, "stateful_step_count": 30, "derandomize": False},
    "ci": {"max_examples": 200, "stateful_step_count": 30, "derandomize": True},
    "thorough": {"max_examples": 2000, "stateful_step_count": 60, "derandomize": False},
}

for _name, _values in PROFILES.items():
    settings.register_profile(_name, deadline=None, suppress_health_check=SUPPRESSED, phases=PHASES,
                              print_blob=False, **_values)  # type: ignore[arg-type]


def default_profile() -> str:
    chosen = os.environ.get("MQCONFORM_SETTINGS")
    if chosen:
        return chosen
    return "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev"


def get(name: str, **overrides: object) -> settings:
    """The registered profile `name` with overrides (e.g. database, max_examples)."""
    if name not in PROFILES:
        raise ValueError(f"unknown settings profile {name!r} (known: {', '.join(PROFILES)})")
    return settings(settings.get_profile(name), **overrides)  # type: ignore[arg-type]



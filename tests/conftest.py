"""Suite-wide test settings: the suite's own Hypothesis profiles (ci under CI=true)."""

from __future__ import annotations

from hypothesis import settings

from mqconform.conformance import settings as suite_settings

settings.load_profile(suite_settings.default_profile())

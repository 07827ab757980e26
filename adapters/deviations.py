"""Moved to :mod:`mqconform.conformance.judging.deviations` (verdicts are made there); this name remains only
for ``parse_version``, which adapters import, until they import it from there."""

from mqconform.conformance.judging.deviations import parse_version

__all__ = ["parse_version"]

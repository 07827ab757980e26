"""The spec rules as data: one YAML file per area, loaded and validated by :func:`load_catalogue`."""

from .catalogue import AREAS, KINDS, PROFILES, Catalogue, Rule, SpecError, load_catalogue

__all__ = ["AREAS", "KINDS", "PROFILES", "Catalogue", "Rule", "SpecError", "load_catalogue"]

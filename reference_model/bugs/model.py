"""What a registered bug model is (:class:`BugModel`); the bugs are the other modules of this package."""

from __future__ import annotations

import attrs

from ..options import ModelOptions


@attrs.frozen
class BugModel:
    """One upstream bug as a variant of the model."""

    #: the registry's name for it (``model:`` in deviations.yaml): the upstream key, lower case
    name: str
    #: the upstream key or issue (ARTEMIS-4985, rabbitmq-server#5609)
    key: str
    #: the ModelOptions field the bug switches on (a bool, False on every profile)
    option: str
    #: the spec rules the bug breaks
    rules: tuple[str, ...]
    #: an http(s) link to the upstream evidence
    source: str
    #: the release range it was measured on, as the registry writes it
    releases: str
    #: one sentence: what the broker does instead
    summary: str

    def enable(self, options: ModelOptions) -> ModelOptions:
        """`options` (a profile's model, maybe held to an adapter's contract) with this bug."""
        return options.evolve(**{self.option: True})

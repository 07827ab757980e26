"""Registered broker bugs as executable variants of the reference model.

Each module here is one upstream bug, named by its upstream key (``artemis_4985`` is ARTEMIS-4985):
a :class:`BugModel` that documents it (the rules it breaks, its source, the releases it was measured
on) and switches on the one named model option (:class:`~mqconform.reference_model.options.ModelOptions`)
that changes exactly what the bug changes, hooked at the one place in the model where the broker
differs. No profile sets such an option: the model with a bug is what a broker with that bug answers.

The known-deviation registry (mqconform/conformance/deviations.yaml, ``model:``) names a bug model per
entry, and a finding is explained by the bug only when its counterexample, replayed on the
implementation with the bug model's expectations, holds at every step under every observation
(mqconform.conformance.deviations).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .model import BugModel


def _load() -> dict[str, BugModel]:
    from . import (
        artemis_4985,
        artemis_cancel_drop_delivering,
        artemis_enforce_ring_in_delivery,
        artemis_linked_list_repeat,
        hornetq_messages_added_depaged,
        nats_max_age_after_a_ttl_message,
        nats_refused_pull_counts_redelivered,
        nats_server_78fd547,
        nats_server_3836d96,
        nats_server_6877,
        nats_server_7608,
        nats_server_7795,
        nats_server_8102,
        rabbitmq_server_5609,
    )

    found = {}
    for module in (artemis_4985, artemis_cancel_drop_delivering, artemis_enforce_ring_in_delivery,
                   artemis_linked_list_repeat, hornetq_messages_added_depaged,
                   nats_max_age_after_a_ttl_message, nats_refused_pull_counts_redelivered,
                   nats_server_78fd547, nats_server_3836d96, nats_server_6877, nats_server_7608,
                   nats_server_7795, nats_server_8102, rabbitmq_server_5609):
        bug = module.BUG
        found[bug.name] = bug
    return found


#: bug model name -> the bug
BUGS: Final[Mapping[str, BugModel]] = _load()


def bug_model(name: str) -> BugModel:
    """The bug model `name`; KeyError naming the known ones."""
    try:
        return BUGS[name]
    except KeyError:
        raise KeyError(f"unknown bug model {name!r} (known: {', '.join(BUGS)})") from None

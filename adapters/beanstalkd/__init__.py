"""The `beanstalkd` adapter (:mod:`.adapter`) and its server launcher (:mod:`.server`); ``ROOM``
describes the broker (:mod:`mqconform.adapters.rooms`). ``BeanstalkdAdapter`` is imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rooms import BrokerRoom, adapter_on_first_use

ROOM = BrokerRoom(name="beanstalkd", adapter="mqconform.adapters.beanstalkd:BeanstalkdAdapter",
                  profile="beanstalkd", order=60)

if TYPE_CHECKING:
    from .adapter import BeanstalkdAdapter

__all__ = ["ROOM", "BeanstalkdAdapter"]

__getattr__ = adapter_on_first_use(__name__, "BeanstalkdAdapter")

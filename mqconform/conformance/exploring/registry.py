"""The machines of the suite, by area."""

from __future__ import annotations

from .base import ConformanceMachine
from .machines.admission import AdmissionMachine
from .machines.delivery import DeliveryMachine
from .machines.expiry import ExpiryMachine
from .machines.lastvalue import LastValueMachine
from .machines.paging import PagingMachine
from .machines.redelivery import RedeliveryMachine
from .machines.retention import RetentionMachine
from .machines.ring import RingMachine
from .machines.scheduling import SchedulingMachine
from .machines.storage import StorageMachine
from .machines.throttle import ThrottleMachine

MACHINES: dict[str, type[ConformanceMachine]] = {
    m.area: m
    for m in (DeliveryMachine, RingMachine, RedeliveryMachine, SchedulingMachine, PagingMachine,
              ThrottleMachine, AdmissionMachine, StorageMachine, ExpiryMachine,
              RetentionMachine, LastValueMachine)
}

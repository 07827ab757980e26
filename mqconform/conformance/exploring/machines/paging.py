"""Paging and address-full policies: PAGE, DROP, BLOCK, FAIL; one copy per address; depage.

Each send is compared under the check of its address's policy: `send.page_full` where the address
has page limits (PAGING-13..16, capability page_limits: drawn where one queue leaves the
second-consumer draw free), `send.blocked` under BLOCK (PAGING-26), `send.dropped` under DROP and
`send.failed_full` under FAIL (PAGING-27), else `send.result`. The paging flag is compared after
every step under `paging.flag`, or `paging.flag_shared` on an address with two queues (PAGING-17).
Where the adapter has scheduling, one send in eight carries a delivery time no example reaches: paged,
it counts as paged, not scheduled, until depaged (`send.scheduled_paged`, SCHED-7). Where it has
rings, an unlimited PAGE address of one queue draws (page size 500) a ring of 2 on that queue, whose
counts are compared after every step (`counters.ring_paged`, RING-11).

Message-count limits (PAGING-1: `max_size_messages`, alone or beside the byte limit) are drawn where
the adapter offers `page_limits`: the Artemis setting (ARTEMIS-3720) that the Artemis adapter sets live
with the page limits (addAddressSettings json, 2.32+); HornetQ has none. Not under BLOCK: the Artemis
adapter tells a blocked address by AddressSize, which counts bytes only. A read budget in messages
(PAGING-10: `max_read_page_messages`) is drawn on a PAGE address where the adapter offers `paging` and
the claimed profile depages under a read budget (depage_rule read_budget). Where it offers `selectors`,
the first consumer of q1 may select `color = 'red'` (PAGING-12: a selector is evaluated at dispatch
on depaged messages; its receives under `receive.selector`) and q2 of two may filter on it (DELIVERY-2:
routing), the single sends then alternating red and blue. Each of these is drawn only behind its
gate, so the draws of an adapter without it are as before.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from ..checks import Checks, check
from ..consumers import MODE_INDEX, consumer_settings
from ..queue_machine import QUEUE_CHECKS, WHICH, QueueMachine

#: SCHED-7: the size_index of a send that carries a delivery time, and that time (never reached)
SCHEDULED_INDEX = 6
FAR_DELIVERY_MS = 3_600_000
POLICY_FEATURE = {"PAGE": "paging", "DROP": "drop_policy", "BLOCK": "block_policy", "FAIL": "fail_policy"}
#: PAGING-1: the address limits drawn where message counts are offered (bytes only is the first: it
#: shrinks to the draws of before), and the message-count limits
LIMIT_KINDS = ("bytes", "messages", "both")
MESSAGE_LIMITS = (2, 3)
#: PAGING-10: read budgets in messages (-1: none, the default)
READ_BUDGET_MESSAGES = (-1, 1, 2)
#: PAGING-12: the selector a selecting consumer opens with, and the property the single sends carry
SELECTOR = "color = 'red'"
SELECTED = "red"
COLORS = (SELECTED, "blue")

#: this machine's steps: the paging flag (an address with two queues stays in page mode while one
#: holds messages: paging.flag_shared), a paged send with a delivery time, a ring queue's counts, a
#: selecting consumer's receive, and a send compared under its address's policy (PAGING-26 BLOCK never
#: pages, PAGING-27 DROP and FAIL discard before any queue, PAGING-13..16 page limits and page-full,
#: PAGING-30 the current page file kept by page cleanup), which also evidences send.result
PAGING_CHECKS = Checks(
    check("paging.flag", "PAGING-6", "PAGING-7", "PAGING-8", "PAGING-28", "PAGING-1", needs=("paging_flag",)),
    check("paging.flag_shared", "PAGING-17", "PAGING-6", "PAGING-7", "PAGING-8", "PAGING-28", "PAGING-1",
          needs=("paging_flag",)),
    check("send.scheduled_paged", "SCHED-7", needs=("scheduling", "counter:paged_count")),
    check("counters.ring_paged", "RING-11", "RING-3", needs=("ring", "paging")),
    check("receive.selector", "PAGING-12", "PAGING-10", "PAGING-7", needs=("selectors",)),
    check("send.blocked", "PAGING-26", needs=("block_policy",), extends="send.result"),
    check("send.dropped", "PAGING-27", needs=("drop_policy",), extends="send.result"),
    check("send.failed_full", "PAGING-27", needs=("fail_policy",), extends="send.result"),
    check("send.page_full", "PAGING-13", "PAGING-14", "PAGING-15", "PAGING-16", "PAGING-30",
          needs=("paging", "page_limits"), extends="send.result"))


class PagingMachine(QueueMachine):
    area = "paging"
    CHECKS = QUEUE_CHECKS.citing({
        "send.result": ("PAGING-3", "PAGING-4", "PAGING-5", "PAGING-6", "PAGING-7"),
        "receive.id": ("PAGING-10", "PAGING-7"),
        "counters.paged_count": ("PAGING-2", "PAGING-9", "PAGING-10"),
        "counters.pending_count": ("PAGING-10", "PAGING-11"),
        "counters.message_count": ("PAGING-2", "DELIVERY-1"),
        "pending.order": ("PAGING-10",)}) | PAGING_CHECKS
    QUEUES = ("q1", "q2")
    ADDRESS = "a"
    SIZES = (100, 100, 250)
    REQUIRES = ("queues",)
    ANY_OF = tuple(POLICY_FEATURE.values())

    @initialize(policy_index=st.integers(min_value=0, max_value=3),
                max_size=st.sampled_from([200, 300]), page_size=st.sampled_from([200, 500]),
                budget=st.sampled_from([None, 300]), mode=MODE_INDEX, queues=st.sampled_from([1, 2]),
                second_consumer=st.booleans(), data=st.data())
    def setup(self, policy_index: int, max_size: int, page_size: int, budget: int | None, mode: int,
              queues: int, second_consumer: bool, data: st.DataObject) -> None:
        policies = [p for p, feature in POLICY_FEATURE.items() if self.can(feature)]
        policy = policies[policy_index % len(policies)]
        address: dict[str, object] = {"name": "a", "max_size_bytes": max_size, "page_size_bytes": page_size,
                                      "full_policy": policy}
        if budget is not None:
            address["max_read_page_bytes"] = budget
        address.update(self.draw_message_limits(data, policy))
        self.send_check = {"BLOCK": "send.blocked", "DROP": "send.dropped",
                           "FAIL": "send.failed_full"}.get(policy, "send.result")
        free = policy == "PAGE" and queues == 1 and second_consumer  # one queue has no second consumer
        if free and page_size == 200:
            address.update(self.page_limits(max_size, page_size))
        self.ring_queue = free and page_size == 500 and self.can("ring")  # RING-11
        self.d.both("address", address)
        self.QUEUES = ("q1", "q2")[:queues]
        #: the ids of the single sends that match SELECTOR (a batch carries no property)
        self.selected: set[str] = set()
        #: DELIVERY-2: q2 of two takes only what matches its filter SELECTOR (routing)
        self.filtering = queues == 2 and self.can("selectors") and data.draw(st.booleans(), label="filter")
        for queue in self.QUEUES:
            ring = {"ring_size": 2} if self.ring_queue else {}
            kept = {"filter": SELECTOR} if self.filtering and queue == "q2" else {}
            self.d.both("queue", {"name": queue, "address": "a", **ring, **kept})
        settings = consumer_settings(self.caps, mode)
        #: PAGING-12: the first consumer of q1 selects SELECTOR (the single sends then carry COLORS)
        self.selecting = (settings is not None and self.can("selectors")
                          and data.draw(st.booleans(), label="selector"))
        if settings is not None:
            self.declare_consumer("q1", **settings, **({"selector": SELECTOR} if self.selecting else {}))
            if queues == 2 and second_consumer:
                self.declare_consumer("q2", **settings)
        self.ready = True

    def draw_message_limits(self, data: st.DataObject, policy: str) -> dict[str, object]:
        """PAGING-1: a message-count limit alone or beside the byte limit (capability page_limits, not
        under BLOCK); PAGING-10: a read budget in messages (a PAGE address, capability paging, a profile
        that depages under a read budget). Nothing is drawn without the gate."""
        limits: dict[str, object] = {}
        if policy != "BLOCK" and self.can("page_limits"):
            kind = data.draw(st.sampled_from(LIMIT_KINDS), label="address limits")
            if kind != "bytes":
                limits["max_size_messages"] = data.draw(st.sampled_from(MESSAGE_LIMITS), label="max messages")
            if kind == "messages":
                limits["max_size_bytes"] = -1
        if policy == "PAGE" and self.can("paging") and self.options.depage_rule == "read_budget":
            messages = data.draw(st.sampled_from(READ_BUDGET_MESSAGES), label="read budget messages")
            if messages >= 0:
                limits["max_read_page_messages"] = messages
        return limits

    def message_properties(self) -> dict[str, str] | None:
        """PAGING-12, DELIVERY-2: with a selecting consumer or a filtering queue, the single sends
        alternate COLORS (the first red; a batch carries none, so matches no selector)."""
        if not (getattr(self, "selecting", False) or getattr(self, "filtering", False)):
            return None
        color = COLORS[(self.counter + 1) % 2]
        if color == SELECTED:
            self.selected.add(f"m{self.counter}")
        return {"color": color}

    def check_accounted(self, queue: str) -> None:
        """DELIVERY-21: a filtering queue is accountable only for the sends its filter let in."""
        if not (self.filtering and queue == "q2"):
            super().check_accounted(queue)
            return
        accepted = self.accepted
        self.accepted = [m for m in accepted if m in self.selected]
        try:
            super().check_accounted(queue)
        finally:
            self.accepted = accepted

    def receive_check(self, consumer: str) -> str:
        """A selecting consumer's receives under `receive.selector` (PAGING-12)."""
        if self.consumer_args[consumer].get("selector") is not None:
            return "receive.selector"
        return super().receive_check(consumer)

    def page_limits(self, max_size: int, page_size: int) -> dict[str, object]:
        """PAGING-13..16: page limits and a page-full policy the adapter honours, or none (then the
        address pages without a limit). A byte limit of one page (PAGING-14) under the smaller
        address limit, a message limit of 2 (PAGING-15) under the larger one."""
        policies = [p for p in ("DROP", "FAIL") if self.can("page_limits", POLICY_FEATURE[p])]
        if not policies:
            return {}
        self.send_check = "send.page_full"
        limits: dict[str, object] = {"page_full_policy": policies[(page_size // 100) % len(policies)]}
        if max_size == 200:
            limits["page_limit_bytes"] = page_size
        else:
            limits["page_limit_messages"] = 2
        return limits

    @precondition(lambda self: self.ready)
    @rule(size_index=WHICH, priority=st.sampled_from([4, 4, 0, 9, 5]))  # QueueMachine.send's draws
    def send(self, size_index: int, priority: int) -> None:
        """As QueueMachine.send; SCHED-7: where the adapter has scheduling, a send with a delivery time
        no example reaches, and the paged and scheduled counts after it."""
        if size_index != SCHEDULED_INDEX or not self.can("scheduling"):
            super().send(size_index, priority)
            return
        self.do_send(100, 4, scheduled_at=FAR_DELIVERY_MS)
        for queue in self.QUEUES:
            self.compare_counter("send.scheduled_paged", queue, "paged_count", "scheduled_count",
                                 "message_count")

    def compare_counters(self, queue: str) -> dict[str, int] | None:
        """As QueueMachine's; RING-11: a ring queue's counts under `counters.ring_paged` too."""
        shown = super().compare_counters(queue)
        if shown is not None and getattr(self, "ring_queue", False):
            expected, actual = self.last_counters
            for name in ("pending_count", "paged_count", "replaced", "message_count"):
                if name in actual:
                    self.d.expect_equal("counters.ring_paged", expected[name], actual[name],
                                        f"ring queue {queue} {name}: ", field=name)
        return shown

    @precondition(lambda self: self.ready and self.can("browse"))
    @rule(which=st.integers(min_value=0, max_value=1))
    def browse(self, which: int) -> None:
        queue = self.QUEUES[which % len(self.QUEUES)]
        self.d.both("browse", queue, compare="browse.ids")

    @invariant()
    def paging_flag_agrees(self) -> None:
        if self.ready and self.can("paging_flag"):
            observed = self.d.observe_if_observable("paging", "a")
            if observed is not None:
                check = "paging.flag_shared" if len(self.QUEUES) == 2 else "paging.flag"
                self.d.expect_equal(check, *observed, "address a paging: ")

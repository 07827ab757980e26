"""The restart step (RESTART-1..6), mixed into the queue machines: gated by ``can("restart")``.

The machine restarts the implementation mid-example, gracefully (SIGTERM) or with SIGKILL, and the
model with it (``restart``: what survives is the claimed profile's ``restart_*`` options). Before a
kill it waits the profile's flush interval twice (RESTART-4; only with ``advance_time``, else the
kill becomes a graceful restart); a profile whose graceful restart is a race (RESTART-6,
``restart_graceful_exact``) is restarted by SIGKILL only. Consumers the profile closes or the reload
ends are opened again (RESTART-2, RESTART-6). Right
after the restart it compares every counter both sides show, the stream and consumer state
(``stream_state``, RESTART-5) and the delivery count of every message a consumer still holds;
everything later (what is received, acknowledged, redelivered) is compared by the machine's own
steps, so a lost or resurrected message is a counterexample with the restart step in it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from mqconform.adapters.contract import COUNTERS

from .checks import Checks, check
from .driver import Inconclusive

#: checks of the steps after a restart that a lost, resurrected or misplaced message fails first
FOLLOW_UP_CHECKS = ("receive.id", "ack.result", "delivery_count", "counters.message_count",
                    "counters.added", "delivery.acked_not_redelivered")
AFTER_RESTART = ("RESTART-1", "RESTART-2", "RESTART-3", "RESTART-6")
#: the restart step's checks (a machine mixing in RestartSteps lists them in its CHECKS); those after a
#: kill also evidence RESTART-4 (the kill came after the flush interval)
RESTART_CHECKS = Checks(
    check("restart.accepted", "RESTART-1", "RESTART-6"),
    check("restart.counters", "RESTART-1", "RESTART-2", "RESTART-3", "RESTART-6", needs=("restart",)),
    check("restart.delivery_count", "RESTART-1", "RESTART-3", "RESTART-6", needs=("restart",)),
    check("restart.reopen", "RESTART-2", "RESTART-6", needs=("restart",)),
    check("restart.stream_state", "RESTART-5", "RESTART-3", needs=("restart", "stream_state")),
    check("restart.kill.counters", "RESTART-1", "RESTART-2", "RESTART-3", "RESTART-4", "RESTART-6",
          needs=("restart",)),
    check("restart.kill.delivery_count", "RESTART-1", "RESTART-3", "RESTART-4", "RESTART-6",
          needs=("restart",)),
    check("restart.kill.stream_state", "RESTART-5", "RESTART-3", "RESTART-4",
          needs=("restart", "stream_state")))


class RestartSteps:
    """Mixin for :class:`~.queue_machine.QueueMachine` subclasses (their CHECKS list RESTART_CHECKS)."""

    def _stream_states(self, queue: str) -> tuple[dict[str, int], dict[str, int]]:
        """The model's and the implementation's ``stream_state`` of `queue` (info stops the run)."""
        d: Any = self.d  # type: ignore[attr-defined]
        expected = d.model.call("stream_state", queue=queue)
        actual = d.adapter.call("stream_state", queue=queue)
        if not actual.is_ok:
            raise Inconclusive(f"stream_state: the adapter could not answer: {actual.error}")
        return dict(expected.value), dict(actual.value)

    def may_restart(self) -> bool:
        """The machine may restart now: it is ready, and the adapter and the profile can."""
        machine: Any = self
        return bool(machine.ready and machine.can("restart"))

    @precondition(lambda self: self.may_restart())
    @rule(kill=st.booleans())
    def restart(self, kill: bool) -> None:
        machine: Any = self
        d, options = machine.d, machine.options
        # RESTART-6: where a graceful restart's outcome is a race, only a kill is compared
        mode = "kill" if kill or not options.restart_graceful_exact else "graceful"
        if kill and options.restart_flush_ms > 0:
            if machine.can("advance_time"):
                d.both("advance", 2 * options.restart_flush_ms)
            else:
                mode = "graceful"
        # the checks after a kill also evidence RESTART-4 (the kill came after the flush interval)
        check = "restart.kill" if mode == "kill" else "restart"
        d.both("restart", mode)
        # from now on a wrong delivery, ack or count is (also) a restart finding: cite RESTART-*
        d.rules = {**d.rules, **{check: tuple(dict.fromkeys(d.rules.get(check, ()) + AFTER_RESTART))
                                 for check in FOLLOW_UP_CHECKS}}
        if options.restart_consumers in ("closed", "reloaded"):  # RESTART-2, RESTART-6
            for consumer in sorted(machine.open_consumers):
                d.both("consumer", machine.consumer_args[consumer], compare="restart.reopen")
        for queue in machine.QUEUES:
            observable = [c for c in COUNTERS if machine.can(f"counter:{c}")]
            if observable:
                want, got = d.observe_both("counters", queue)
                for name in observable:
                    d.expect_equal(f"{check}.counters", want[name], got.get(name),
                                   f"after a {mode} restart, queue {queue} {name}: ", field=name)
        if machine.can("stream_state"):  # RESTART-5: the stream and consumer counters survive
            for queue in machine.QUEUES:
                want, got = self._stream_states(queue)
                d.observe("stream_state", queue, got)
                for name, value in want.items():
                    d.expect_equal(f"{check}.stream_state", value, got.get(name),
                                   f"after a {mode} restart, queue {queue} {name}: ", field=name)
        if machine.can("delivery_count"):
            for consumer in sorted(machine.open_consumers):
                queue = machine.consumer_args[consumer]["queue"]
                for msg_id in machine.unacked(consumer):
                    want, got = d.observe_both("delivery_count", queue, msg_id)
                    d.expect_equal(f"{check}.delivery_count", want, got,
                                   f"after a {mode} restart, delivery count of {msg_id} held by {consumer}: ")

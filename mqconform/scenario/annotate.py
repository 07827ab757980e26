"""Make scenario steps self-checking: add to each step what the claimed profile's model says.

Used for counterexamples: each step gets ``expect`` with the model's result (for compared
operations) and, after the step, the counters and pending order of every declared queue and the
state of every throttle, store and admission request, so replaying the file against an
implementation fails at the first step where it diverges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mqconform.adapters.contract import COUNTERS
from mqconform.adapters.reference import ReferenceAdapter
from mqconform.operations import COMPARED, call_operation
from mqconform.reference_model.options import ModelOptions

from .expect import normal
from .schema import STREAM_STATE_KEYS


class ModelRejected(ValueError):
    """The claimed model rejects a step (the steps are not a valid scenario for that profile)."""


def _operation(step: Mapping[str, Any]) -> tuple[str | None, Any]:
    ops = [(k, v) for k, v in step.items() if k != "expect"]
    return ops[0] if ops else (None, None)


def _value(model: ReferenceAdapter, op: str, **kwargs: Any) -> Any:
    result = model.call(op, **kwargs)
    return result.value if result.is_ok else None


def annotate(steps: Sequence[Mapping[str, Any]], options: ModelOptions,
             after_step: Callable[[ReferenceAdapter], None] | None = None, *,
             delivery_counts: bool = False) -> list[dict[str, Any]]:
    """`steps` (scenario form) with every expectation replaced by the model's values; `after_step` is
    called with the model after each step (to read what no expectation shows). `delivery_counts`:
    each receive of a message also expects its delivery count (a bug model's replay compares every
    observation: mqconform.conformance.judging.bug_replay.holds_under)."""
    model = ReferenceAdapter(options=options)
    consumers: dict[str, str] = {}
    queues: list[str] = []
    throttles: list[str] = []
    stores: list[str] = []
    requests: list[str] = []
    #: RETENTION-1..11: stream addresses and the queues joined to them (their consumer counts only:
    #: their sequences are the stream's, not the model queue's)
    streams: list[str] = []
    joined: list[str] = []
    out: list[dict[str, Any]] = []
    for number, step in enumerate(steps, start=1):
        op, args = _operation(step)
        if op is None:
            continue  # a lone expectation: the model's own state replaces it below
        result = call_operation(model, op, args)
        if not result.is_ok:
            raise ModelRejected(f"step {number} {op}: the claimed model rejects it: {result.error}")
        expect: dict[str, Any] = {}
        if op in COMPARED:
            expect["result"] = normal(result.value)
        if op == "consumer" and isinstance(args, Mapping):
            consumers[str(args.get("name"))] = str(args.get("queue"))
        elif delivery_counts and op == "receive" and isinstance(result.value, str) and args in consumers:
            count = model.delivery_count(consumers[args], result.value)
            if count.is_ok:
                expect["delivery_count"] = [{"queue": consumers[args], "id": result.value,
                                             "count": count.value}]
        if op == "queue":
            queues.append(args["name"])
        elif op == "throttle":
            throttles.append(args["name"])
        elif op == "store":
            stores.append(args["name"])
        elif op == "submit":
            requests.append(str(args["id"]))
        elif op == "address" and args.get("retention") is not None:
            streams.append(args["name"])
        elif op == "join" and result.value == "created":
            joined.append(args["name"])
        elif op == "leave":
            joined.remove(args)
        if queues:
            expect["queue"] = [_queue_state(model, q) for q in queues]
            if options.has("consumer_state"):  # DELIVERY-27..30: the queue in JetStream's terms
                expect["consumer_state"] = [{"queue": q, **_value(model, "consumer_state", queue=q)}
                                            for q in queues]
                expect["stream_state"] = [
                    {"queue": q, **{k: v for k, v in _value(model, "stream_state", queue=q).items()
                                    if k in STREAM_STATE_KEYS}} for q in queues]
        if streams:
            expect["retention"] = [{"address": a, **_value(model, "retention_state", address=a)}
                                   for a in streams]
            expect["consumer_state"] = expect.get("consumer_state", []) + [
                {"queue": q, **{k: v for k, v in _value(model, "consumer_state", queue=q).items()
                                if k in ("num_pending", "num_ack_pending", "num_redelivered")}}
                for q in joined]
            if not expect["consumer_state"]:
                del expect["consumer_state"]
        if throttles:
            expect["throttle"] = [{"name": t, **_value(model, "throttle_state", throttle=t)}
                                  for t in throttles]
        if stores:
            expect["store"] = [{"name": s, **_value(model, "store_state", store=s)} for s in stores]
        if requests:
            expect["request"] = [_request_state(model, r) for r in requests]
        out.append({op: normal(args), "expect": expect})
        if after_step is not None:
            after_step(model)
    return out


def _queue_state(model: ReferenceAdapter, queue: str) -> dict[str, Any]:
    counters = model.counters(queue).value
    state: dict[str, Any] = {"name": queue, **{c: counters[c] for c in COUNTERS}}
    state["pending"] = model.pending_ids(queue).value
    return state


def _request_state(model: ReferenceAdapter, request: str) -> dict[str, Any]:
    answer = _value(model, "request", id=request)
    if answer is None:
        return {"id": request, "answer": None}
    return {"id": request, "answer": answer["answer"], "at_ms": answer["at_ms"]}

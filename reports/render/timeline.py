"""Counterexample timelines: a scenario's steps replayed on the model, drawn as an inline SVG.

The steps give what the test did (sent, scheduled, delivered, acked, returned); replaying them on
:class:`~mqconform.adapters.reference.ReferenceAdapter` under the scenario's profile with
``record_events`` gives what the model did on its own account (replaced, dropped, killed, paged,
depaged, blocked, ...). Time runs downwards, one lane per queue/address and per consumer; every string
is escaped, since message ids and queue names come from the implementation under test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

import attrs
import yaml

#: colour of each kind of mark (also the legend, in this order).
COLOURS: Mapping[str, str] = {
    "sent": "#4c78a8", "scheduled": "#72b7b2", "delivered": "#54a24b", "acked": "#2e7d32",
    "returned": "#f58518", "replaced": "#e45756", "dropped": "#b22222", "killed": "#9d755d",
    "paged": "#b279a2", "depaged": "#c994c7", "blocked": "#7f7f7f", "other": "#9a9a9a",
}
_EVENT_KIND = {"replaced": "replaced", "dropped": "dropped", "killed": "killed", "paged": "paged",
               "depaged": "depaged", "blocked": "blocked", "unblocked": "blocked", "rejected": "dropped"}


@attrs.frozen
class Mark:
    """One thing that happened to one message (or lane) at one step."""

    step: int
    time_ms: int
    lane: str
    kind: str  # a key of COLOURS
    text: str
    by_model: bool = False  # an event the model raised on its own (not a step's direct answer)


@attrs.frozen
class Timeline:
    """Lanes in order of first appearance and the marks, in order."""

    profile: str
    lanes: tuple[str, ...]
    marks: tuple[Mark, ...]
    steps: int
    problem: str = ""  # why the replay stopped early, if it did


def load_scenario(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """(profile, steps) of a counterexample scenario file; ValueError when it is not one."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise ValueError(f"{path.name}: not a scenario (expected keys profile and steps)")
    return str(data.get("profile") or "artemis"), [s for s in data["steps"] if isinstance(s, dict)]


def _op(step: Mapping[str, Any]) -> tuple[str, Any]:
    ops = [(k, v) for k, v in step.items() if k != "expect"]
    if len(ops) != 1:
        raise ValueError(f"a step has one operation, not {len(ops)}")
    return str(ops[0][0]), ops[0][1]


def _held(adapter: Any, consumer: str, with_tx: bool) -> list[str]:
    """Ids a consumer holds (dispatched, received, tx-acked): what a close or rollback returns."""
    state = adapter.world.broker.consumers.get(consumer)
    if state is None:
        return []
    held = list(state.buffer) + list(state.received)
    return held + [ref.id for ref in state.tx_acked] if with_tx else held


def _lane_of(op: str, args: Any) -> str:
    declared = op in ("queue", "address", "consumer") and isinstance(args, Mapping)
    if declared and isinstance(args.get("name"), str):
        return str(args["name"])
    if isinstance(args, str):
        return args
    if isinstance(args, Mapping):
        for key in ("consumer", "to", "queue", "name", "throttle", "admission", "store"):
            if isinstance(args.get(key), str):
                return str(args[key])
    return "control"


def _marks_for(number: int, now: int, op: str, args: Any, result: Any, held: list[str]) -> list[Mark]:
    ok = result.is_ok
    value = result.value
    lane = _lane_of(op, args)
    if not ok:
        return [Mark(number, now, lane, "other", f"{op}: {result.type} {result.error or ''}".strip())]
    if op == "send":
        scheduled = args.get("scheduled_at_ms")
        kind = "scheduled" if scheduled else "sent"
        text = f"{kind} {args.get('id')}" + (f" for t={scheduled}" if scheduled else "")
        if value not in (None, "accepted"):
            text += f" → {value}"
        return [Mark(number, now, lane, kind if value in (None, "accepted", "paged") else "dropped", text)]
    if op == "receive":
        if value is None:
            return [Mark(number, now, lane, "other", "receive: nothing")]
        return [Mark(number, now, lane, "delivered", f"delivered {value}")]
    if op in ("ack", "nack"):
        kind = "acked" if op == "ack" else "returned"
        text = f"{kind} {args.get('id')}" + ("" if value in (None, "ok") else f" → {value}")
        return [Mark(number, now, lane, kind if value in (None, "ok") else "other", text)]
    if op in ("close", "rollback"):
        marks = [Mark(number, now, lane, "other", "closed" if op == "close" else "rolled back")]
        return marks + [Mark(number, now, lane, "returned", f"returned {msg}") for msg in held]
    if op == "advance":
        return [Mark(number, now, "control", "other", f"clock +{args} ms")]
    if op in ("queue", "address", "consumer"):
        extra = ""
        if isinstance(args, Mapping) and op == "queue" and args.get("ring_size", -1) != -1:
            extra = f" ring {args['ring_size']}"
        if op == "consumer" and isinstance(args, Mapping):
            extra = f" on {args.get('queue')}"
        verb = "opened" if op == "consumer" else "declared"
        return [Mark(number, now, lane, "other", f"{op} {verb}{extra}")]
    shown = "" if value is None else f" → {value}"
    return [Mark(number, now, lane, "other", f"{op}{shown}")]


def build_timeline(profile: str, steps: Sequence[Mapping[str, Any]]) -> Timeline:
    """Replay `steps` on the model under `profile` and collect the marks (see the module docstring)."""
    from mqconform.adapters.reference import ReferenceAdapter
    from mqconform.operations import call_operation
    from mqconform.reference_model.profiles import profile as load_profile

    marks: list[Mark] = []
    lanes: dict[str, None] = {}
    problem = ""
    try:
        adapter = ReferenceAdapter(options=load_profile(profile))
    except Exception as exc:  # an unknown profile name in a scenario file is bad input, not a crash
        return Timeline(profile, (), (), len(steps), f"cannot build the model: {exc}")
    broker = adapter.world.broker
    broker.record_events = True
    for number, step in enumerate(steps, start=1):
        try:
            op, args = _op(step)
            held = _held(adapter, str(args), op == "rollback") if op in ("close", "rollback") else []
            seen = len(broker.events)
            result = call_operation(adapter, op, args)
        except Exception as exc:  # a malformed step stops the picture, with the reason shown
            problem = f"step {number}: {exc}"
            break
        new = _marks_for(number, broker.now_ms, op, args, result, held)
        for event in broker.events[seen:]:
            kind = _EVENT_KIND.get(event.kind, "other")
            detail = f" ({event.detail})" if event.detail else ""
            new.append(Mark(number, event.time_ms, event.queue or "control", kind,
                            f"{event.kind} {event.msg_id}{detail}".strip(), by_model=True))
        for mark in new:
            lanes.setdefault(mark.lane, None)
        marks.extend(new)
    ordered = [lane for lane in lanes if lane != "control"] + (["control"] if "control" in lanes else [])
    return Timeline(profile, tuple(ordered), tuple(marks), len(steps), problem)


def timeline_of_file(path: Path) -> Timeline:
    """The timeline of one scenario file; a file that cannot be read gives an empty timeline with a reason."""
    try:
        profile, steps = load_scenario(path)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return Timeline("", (), (), 0, f"cannot read the scenario: {exc}")
    return build_timeline(profile, steps)


# ---------------------------------------------------------------------- drawing
GUTTER, LANE_W, ROW_H, HEAD_H, MAX_CHARS = 92, 178, 24, 40, 26


def _short(text: str, limit: int = MAX_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_svg(timeline: Timeline, failing_step: int | None = None) -> str:
    """The timeline as an inline SVG element (no script, every text escaped)."""
    lanes = timeline.lanes or ("control",)
    width = GUTTER + LANE_W * len(lanes) + 8
    height = HEAD_H + ROW_H * max(len(timeline.marks), 1) + 12
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="counterexample timeline">']
    x_of = {lane: GUTTER + LANE_W * i for i, lane in enumerate(lanes)}
    for lane, x in x_of.items():
        out.append(f'<line x1="{x + LANE_W // 2}" y1="{HEAD_H - 6}" x2="{x + LANE_W // 2}" y2="{height - 6}" '
                   'stroke="#d0d0d0" stroke-dasharray="3,3"/>')
        out.append(f'<text x="{x + LANE_W // 2}" y="{HEAD_H - 14}" text-anchor="middle" font-weight="bold" '
                   f'font-size="13"><title>{escape(lane)}</title>{escape(_short(lane, 22))}</text>')
    out.append(f'<text x="4" y="{HEAD_H - 14}" font-size="11" fill="#555">step · t (ms)</text>')
    previous_step = 0
    for row, mark in enumerate(timeline.marks):
        y = HEAD_H + ROW_H * row
        if mark.step == failing_step:
            out.append(f'<rect x="0" y="{y}" width="{width}" height="{ROW_H}" fill="#fdecea"/>')
        if mark.step != previous_step:
            out.append(f'<line x1="0" y1="{y}" x2="{width}" y2="{y}" stroke="#eeeeee"/>')
            out.append(f'<text x="4" y="{y + 16}" font-size="12">{mark.step} · t={mark.time_ms}</text>')
            previous_step = mark.step
        x = x_of.get(mark.lane, GUTTER)
        colour = COLOURS.get(mark.kind, COLOURS["other"])
        dash = ' stroke-dasharray="4,2" stroke="#333"' if mark.by_model else ""
        out.append(f'<rect x="{x + 6}" y="{y + 3}" width="{LANE_W - 12}" height="{ROW_H - 6}" rx="9" '
                   f'fill="{colour}"{dash}/>')
        out.append(f'<text x="{x + LANE_W // 2}" y="{y + 16}" text-anchor="middle" font-size="12" '
                   'fill="#fff">'
                   f'<title>{escape(mark.text)}</title>{escape(_short(mark.text))}</text>')
    out.append("</svg>")
    return "".join(out)


def legend_html() -> str:
    """The colour legend as HTML."""
    items = "".join(f'<span class="key"><i style="background:{c}"></i>{escape(k)}</span>'
                    for k, c in COLOURS.items())
    note = '<span class="key">dashed outline: done by the model on its own</span>'
    return f'<p class="legend">{items} {note}</p>'

"""Long work shows it is alive: a live line on a terminal, plain lines in a log (mqconform.progress)."""

from __future__ import annotations

import io
import threading

from mqconform.progress import AreaProgress, Heartbeat


def _wait_for(stream: io.StringIO, text: str) -> None:
    done = threading.Event()
    for _ in range(200):
        if text in stream.getvalue():
            return
        done.wait(0.01)
    raise AssertionError(f"{text!r} never shown: {stream.getvalue()!r}")


def test_on_a_terminal_one_line_is_rewritten_and_cleared() -> None:
    stream = io.StringIO()
    progress = AreaProgress("ring")
    progress.examples, progress.findings = 7, 1
    with Heartbeat(progress.describe, stream=stream, tty=True, tick=0.01) as heartbeat:
        _wait_for(stream, "ring: 7 examples, 1 finding(s)")
        heartbeat.say("  ring        ok")
    shown = stream.getvalue()
    assert "\n" not in shown.replace("  ring        ok\n", "")  # live updates never add lines
    assert shown.endswith("\r\x1b[K")  # the live line is cleared at the end


def test_in_a_log_plain_lines_come_at_the_interval() -> None:
    stream = io.StringIO()
    with Heartbeat(lambda: "matrix: 3 of 9 tasks done", stream=stream, tty=False, every=0.01):
        _wait_for(stream, "  ... matrix: 3 of 9 tasks done\n")
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()


def test_a_short_block_in_a_log_prints_nothing() -> None:
    stream = io.StringIO()
    with Heartbeat(lambda: "never", stream=stream, tty=False, every=60):
        pass
    assert stream.getvalue() == ""


def test_the_running_exploration_counts_live() -> None:
    class Context:
        examples = 4

    progress = AreaProgress("paging", examples=10)
    progress.context = Context()
    assert progress.describe().startswith("paging: 14 examples, 0 finding(s), ")


def test_a_failing_describe_never_breaks_the_work() -> None:
    def broken() -> str:
        raise RuntimeError("boom")

    stream = io.StringIO()
    with Heartbeat(broken, stream=stream, tty=True, tick=0.01):
        threading.Event().wait(0.05)
    assert stream.getvalue() == ""

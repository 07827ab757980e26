"""A STOMP connection listener for the adapters that speak STOMP (stomp.py): MESSAGE frames sorted
by subscription, RECEIPT and ERROR frames by receipt id, and a wait on either."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

import stomp


class StompListener(stomp.ConnectionListener):  # type: ignore[misc]
    """MESSAGE frames per subscription, RECEIPT/ERROR frames per receipt id."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.frames: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
        self.receipts: dict[str, str | None] = {}
        self.errors: list[str] = []
        self.connected = True

    def on_message(self, frame: Any) -> None:
        with self.cond:
            self.frames[frame.headers.get("subscription", "")].append(frame)
            self.cond.notify_all()

    def on_receipt(self, frame: Any) -> None:
        with self.cond:
            self.receipts[frame.headers.get("receipt-id", "")] = None
            self.cond.notify_all()

    def on_error(self, frame: Any) -> None:
        with self.cond:
            text = (frame.headers.get("message") or frame.body or "ERROR").strip()
            rid = frame.headers.get("receipt-id")
            if rid:
                self.receipts[rid] = text
            self.errors.append(text)
            self.cond.notify_all()

    def on_disconnected(self) -> None:
        with self.cond:
            self.connected = False
            self.cond.notify_all()

    def wait_for(self, done: Callable[[], bool], timeout: float) -> bool:
        with self.cond:
            return bool(self.cond.wait_for(lambda: done() or not self.connected, timeout)) and done()

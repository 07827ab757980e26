"""Exact logical sizes on HornetQ's memory estimates: the calibration of a message's fixed parts
(STOMP and core) at start-up, with a self-check, and the frames (header pad, body) whose estimate is
exactly UNIT x a message's size (docs/adapters/hornetq.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mqconform.reference_model.config import AddressConfig, Message

from .._base import BrokerAdapter, Unsupported
from .._stomp import StompListener as _Listener
from ..contract import AdapterError
from .records import _Address
from .stomp_link import header_bytes

#: broker bytes of memory estimate per logical byte of a message's size
UNIT = 60
#: the sizes' granularity the limits are exact for (the machines' sizes and limits are multiples of it)
STEP = 50
#: max-size-bytes sits this far below UNIT x max: half a STEP, room for the 48-byte references on one
#: side and for HornetQ's negative drift on the other (each depaged message acknowledged takes 48 bytes
#: off the address size it never added: docs/findings/hornetq-2.4-paging.md, finding 3)
SLACK = UNIT * STEP // 2
#: the sizes the paging machine sends, checked at calibration
CHECK_SIZES = (100, 250)
#: bytes kept between a message's encoded size and a power of two (its buffer's capacity)
GUARD = 64
ID_HEADER = "mqcid"
PAD_HEADER = "p"
PARITY_HEADER = "q"


class HornetQSizes(BrokerAdapter):
    """Calibration and the size-exact frames of the hornetq adapter."""

    prefix: str
    sender: Any
    sender_listener: _Listener
    #: the fixed part of a message's memory estimate (everything but its headers), measured
    fixed_bytes: int | None
    fixed_encoded: int
    #: the same two parts for a message of the launcher's core producer (BLOCK), measured
    core_fixed: int
    core_encoded: int
    ref_bytes: int

    if TYPE_CHECKING:  # provided by HornetQAdapter
        def _ctl(self, *words: object) -> list[str]: ...
        def _receipt(self) -> str: ...
        def _await(self, listener: _Listener, receipt: str, what: str) -> str | None: ...

    def _calibrate(self) -> None:
        """The fixed parts of a message's memory estimate and encoded size (everything but its
        headers, body and buffer), from one message on a one-queue address; then a self-check that
        messages of the machines' sizes are estimated at exactly UNIT x size."""
        self.ref_bytes = int(self._ctl("refsize")[0])
        address = _Address("calibration", f"{self.prefix}-calibration", AddressConfig("calibration"))
        queue = f"{self.prefix}-calibration-q"
        self._ctl("settings", address.physical, -1, 10 * 1024 * 1024, "PAGE")
        self._ctl("queue", address.physical, queue)
        try:
            receipt = self._receipt()
            headers = {"destination": address.physical, ID_HEADER: "calibration", "receipt": receipt}
            self.sender.send(destination=address.physical, body="", headers={**headers, "persistent": "true"})
            if self._await(self.sender_listener, receipt, "calibration") is not None:
                raise AdapterError("hornetq: the calibration send was refused")
            estimate, encoded, capacity = (int(x) for x in self._ctl("estimates", queue)[0].split(":"))
            self.fixed_bytes = estimate - capacity - sum(header_bytes(k, v) for k, v in headers.items())
            self.fixed_encoded = encoded - sum(header_bytes(k, v) - 8 for k, v in headers.items())
            for i, size in enumerate(CHECK_SIZES):
                receipt = self._receipt()
                message = Message(f"c{i}", size=size)
                self.sender.send(destination=address.physical, **self._frame(address, message, receipt))
                if self._await(self.sender_listener, receipt, "calibration") is not None:
                    raise AdapterError("hornetq: the calibration send was refused")
                self._check_estimate(queue, i + 1, size, "a message")
        finally:
            self._ctl("destroy", queue)
            self._ctl("unsettings", address.physical)
        self._calibrate_core()

    def _calibrate_core(self) -> None:
        """The fixed parts of a core message's memory estimate and encoded size (the client's body
        buffer starts at 1500 bytes), from one message with an empty pad on a BLOCK address of
        10 MB; then the self-check of the machines' sizes."""
        address = _Address("calibration", f"{self.prefix}-calibration-b", AddressConfig("calibration"))
        queue = f"{self.prefix}-calibration-bq"
        self._ctl("settings", address.physical, 10 * 1024 * 1024, 1024 * 1024, "BLOCK")
        self._ctl("queue", address.physical, queue)
        self._ctl("producer", address.physical)
        try:
            props = {ID_HEADER: "calibration", PAD_HEADER: ""}
            if self._ctl("bsend", address.physical, "calibration", 0, 0)[0] != "accepted":
                raise AdapterError("hornetq: the core calibration send was held back")
            estimate, encoded, capacity = (int(x) for x in self._ctl("estimates", queue)[0].split(":"))
            self.core_fixed = estimate - capacity - sum(header_bytes(k, v) for k, v in props.items())
            self.core_encoded = encoded - sum(header_bytes(k, v) - 8 for k, v in props.items())
            for i, size in enumerate(CHECK_SIZES):
                pad, body = self._core_frame(Message(f"c{i}", size=size))
                if self._ctl("bsend", address.physical, f"c{i}", pad, body)[0] != "accepted":
                    raise AdapterError("hornetq: a core calibration send was held back")
                self._check_estimate(queue, i + 1, size, "a core message")
        finally:
            self._ctl("unproducer", address.physical)
            self._ctl("destroy", queue)
            self._ctl("unsettings", address.physical)

    def _check_estimate(self, queue: str, index: int, size: int, kind: str) -> None:
        """The self-check of a calibration: the broker estimates the queue's message at `index` (of
        logical `size`) at exactly UNIT x size, else AdapterError."""
        got = int(self._ctl("estimates", queue)[index].split(":")[0])
        if got != UNIT * size:
            raise AdapterError(f"hornetq: {kind} of size {size} is estimated {got} bytes by the broker, "
                               f"not {UNIT * size}: the size mapping does not hold")

    def _core_frame(self, message: Message) -> tuple[int, int]:
        """(pad characters, body bytes) of a core message whose memory estimate is exactly UNIT x
        message.size: fixed + the body buffer's capacity (1500 while the encoded message fits, else
        netty's power of two at least the encoded message) + the properties mqcid and p. A capacity
        is chosen, the pad makes up the estimate, the body keeps the encoded message well inside it;
        Unsupported when no capacity fits."""
        if message.properties:
            raise Unsupported("message properties on a BLOCK address")
        props = header_bytes(ID_HEADER, message.id) + header_bytes(PAD_HEADER, "")
        target = UNIT * message.size
        for capacity in (1500, *(2 ** k for k in range(11, 25))):
            rest = target - self.core_fixed - props - capacity  # two bytes per pad character
            if rest < 0:
                break
            if rest % 2:
                continue
            encoded = self.core_encoded + props - 16 + rest
            low = 0 if capacity == 1500 else max(capacity // 2, 1500) + GUARD
            body = max(0, low + 1 - encoded)
            if encoded + body <= capacity - GUARD:
                return rest // 2, body
        raise Unsupported(f"message size {message.size} (no padding reaches an estimate of {target} bytes)")

    def _frame(self, address: _Address, message: Message, receipt: str) -> dict[str, Any]:
        """The SEND frame (headers, body) whose memory estimate is exactly UNIT x message.size:
        ServerMessageImpl#getMemoryEstimate = fixed + the body buffer's capacity (netty grows it to a
        power of two >= the encoded message, at least 512) + every header's property part. A buffer
        capacity is chosen, the body fills the encoded message to 3/4 of it, a pad header makes up
        the rest; Unsupported when no capacity fits."""
        assert self.fixed_bytes is not None
        properties = {k: str(v) for k, v in message.properties.items()}
        base = {ID_HEADER: message.id, "receipt": receipt, **properties}
        target = UNIT * message.size
        capacity = 512
        while capacity <= target:
            for parity in (False, True):
                headers = dict(base)
                if parity:
                    headers[PARITY_HEADER] = ""
                for body in (0, 1):
                    frame = self._fill(address, headers, target, capacity, body)
                    if frame is not None:
                        return frame
            capacity *= 2
        raise Unsupported(f"message size {message.size} (no padding reaches an estimate of {target} bytes)")

    def _fill(self, address: _Address, headers: dict[str, str], target: int, capacity: int,
              body: int) -> dict[str, Any] | None:
        """The frame for one choice of buffer capacity and body (none, or one filling the encoded
        message to 3/4 of the capacity), or None when it does not fit. The broker keeps a
        content-length header as the body's length without leading zeros (measured)."""
        assert self.fixed_bytes is not None
        for digits in range(1, 7) if body else (0,):
            counted = {"destination": address.physical, **headers}
            if body:
                counted["content-length"] = "0" * digits
            pad = target - self.fixed_bytes - capacity - sum(header_bytes(k, v) for k, v in counted.items())
            pad -= header_bytes(PAD_HEADER, "")
            if pad < 0 or pad % 2:
                continue
            counted[PAD_HEADER] = "x" * (pad // 2)
            encoded = self.fixed_encoded + sum(header_bytes(k, v) - 8 for k, v in counted.items())
            fill = 0
            if body:
                fill = capacity * 3 // 4 - encoded
                if fill < 1 or len(str(fill)) != digits:
                    continue
                encoded += fill
            # the encoded message must land well inside (capacity / 2, capacity]
            if encoded > capacity - GUARD or (capacity > 512 and encoded <= capacity // 2 + GUARD):
                continue
            sent = {k: v for k, v in counted.items() if k != "destination"}
            if body:
                sent["content-length"] = str(fill)
            sent["persistent"] = "true"
            return {"headers": sent, "body": "y" * fill}
        return None

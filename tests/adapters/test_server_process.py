"""A broker process is ready only on a port its own process group listens on (adapters/_process.py):
free_port's port can be taken by another process between the probe and the bind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from mqconform.adapters._process import owns_port


def test_owns_port_tells_the_listening_process_group_from_another() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert owns_port(os.getpgrp(), port)  # this test process listens on it
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                                 start_new_session=True)
        try:
            assert not owns_port(other.pid, port)  # a broker whose bind failed: another one answers
        finally:
            other.kill()
            other.wait()
    assert not owns_port(os.getpgrp(), port)  # closed: nobody listens

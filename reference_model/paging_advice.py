"""Static advice about paging configurations that the HornetQ sources warn about (PAGING-21).

HornetQ keeps unacknowledged messages in memory (PAGING-20) and a core client batches acknowledgements
until ack-batch-size bytes (default 1 MiB, artemis-semantics.md H2). With a paging threshold below the
batch size the batch never fills, because nothing more depages until something is acknowledged: the
consumer appears hung. This module reports that deadlock from the configuration alone.
"""

from __future__ import annotations

from .config import AddressConfig

#: The core client's default ack-batch-size in bytes (ActiveMQClient L98; HornetQ 2.2 manual).
ACK_BATCH_SIZE = 1024 * 1024


def ack_batch_deadlock(address: AddressConfig, ack_batch_size: int = ACK_BATCH_SIZE) -> bool:
    """PAGING-21: True when `address` pages (max-size-bytes set) with page-size-bytes below a positive
    ack-batch-size, the configuration the HornetQ manual says "may appear to hang"."""
    pages = address.max_size_bytes >= 0 or address.max_size_messages >= 0
    return pages and ack_batch_size > 0 and address.page_size_bytes < ack_batch_size

"""The artemis adapter's declarations: addresses, queues and their address settings (set live with
the JSON operation from 2.32, else the positional one), limits mapped to broker thresholds."""

from __future__ import annotations

import json
from typing import Any

from proton import Message as AmqpMessage

from mqconform.reference_model.config import (
    AddressConfig,
    QueueConfig,
)

from .._base import (
    Refused,
    Unsupported,
    operation,
)
from ..contract import AdapterError
from .records import BROWSE_LIMIT, ID_PROPERTY, _Address, _Queue
from .settling import ArtemisSettling
from .sizing import Sizing, over_threshold, threshold

#: ActiveMQServerControl#addAddressSettings with 58 arguments (2.18.0 .. 2.31.2, the same list), in
#: order: each name is also the key getAddressSettingsAsJSON(match) gives its value under
_KINDS = {"S": "java.lang.String", "J": "long", "I": "int", "Z": "boolean", "D": "double"}
POSITIONAL_SETTINGS: tuple[tuple[str, str], ...] = tuple(
    (name, _KINDS[kind]) for name, kind in (item.split(":") for item in (
    "addressMatch:S", "DLA:S", "expiryAddress:S", "expiryDelay:J", "lastValueQueue:Z",
    "maxDeliveryAttempts:I", "maxSizeBytes:J", "pageSizeBytes:I", "pageCacheMaxSize:I",
    "redeliveryDelay:J", "redeliveryMultiplier:D", "maxRedeliveryDelay:J", "redistributionDelay:J",
    "sendToDLAOnNoRoute:Z", "addressFullMessagePolicy:S", "slowConsumerThreshold:J",
    "slowConsumerCheckPeriod:J", "slowConsumerPolicy:S", "autoCreateJmsQueues:Z",
    "autoDeleteJmsQueues:Z", "autoCreateJmsTopics:Z", "autoDeleteJmsTopics:Z", "autoCreateQueues:Z",
    "autoDeleteQueues:Z", "autoCreateAddresses:Z", "autoDeleteAddresses:Z", "configDeleteQueues:S",
    "configDeleteAddresses:S", "maxSizeBytesRejectThreshold:J", "defaultLastValueKey:S",
    "defaultNonDestructive:Z", "defaultExclusiveQueue:Z", "defaultGroupRebalance:Z",
    "defaultGroupBuckets:I", "defaultGroupFirstKey:S", "defaultMaxConsumers:I",
    "defaultPurgeOnNoConsumers:Z", "defaultConsumersBeforeDispatch:I", "defaultDelayBeforeDispatch:J",
    "defaultQueueRoutingType:S", "defaultAddressRoutingType:S", "defaultConsumerWindowSize:I",
    "defaultRingSize:J", "autoDeleteCreatedQueues:Z", "autoDeleteQueuesDelay:J",
    "autoDeleteQueuesMessageCount:J", "autoDeleteAddressesDelay:J",
    "redeliveryCollisionAvoidanceFactor:D", "retroactiveMessageCount:J",
    "autoCreateDeadLetterResources:Z", "deadLetterQueuePrefix:S", "deadLetterQueueSuffix:S",
    "autoCreateExpiryResources:Z", "expiryQueuePrefix:S", "expiryQueueSuffix:S", "minExpiryDelay:J",
    "maxExpiryDelay:J", "enableMetrics:Z",
)))
POSITIONAL_OPERATION = f"addAddressSettings({','.join(kind for _, kind in POSITIONAL_SETTINGS)})"
#: the adapter's setting names (the JSON keys of addAddressSettings(match, json)) the positional
#: operation names otherwise
POSITIONAL_NAMES = {"deadLetterAddress": "DLA"}
#: settings the positional operation does not carry and the adapter may leave unset: the
#: catch-all's managementBrowsePageSize (200) bounds what listMessages shows, beyond any example
POSITIONAL_SKIPPED = frozenset({"managementBrowsePageSize"})


class ArtemisDeclarations(ArtemisSettling):
    """Addresses, queues and their address settings."""

    def _ensure_address(self, name: str, config: AddressConfig | None = None, *,
                        shared: bool = False) -> _Address:
        """The address `name`, created when missing: MULTICAST when declared (`config`) or named by a
        queue declaration as its address (`shared`: the model's address gives each of its queues a
        copy; an ANYCAST address would give each message to one of them), else ANYCAST (a queue's
        own address)."""
        address = self.addresses_.get(name)
        if address is None:
            address = _Address(name, self._physical(name))
            mgmt = self._mgmt()
            if shared:
                address.routing = "MULTICAST"
            if config is not None:
                address.routing, address.config = "MULTICAST", config
                address.settings.update(self._limit_settings(config))
                if config.max_size_bytes > 0 and self.features.json_settings:
                    # management refuses a page size above max-size-bytes in one setting
                    # (ActiveMQServerControlImpl#addAddressSettings), broker.xml does not: the limit goes
                    # to the match `<address>.#` (it matches the address itself), merged under the
                    # exact match that carries the page size (HierarchicalObjectRepository)
                    limit = threshold(config.max_size_bytes)
                    self._add_settings(f"{address.physical}.#",
                                       {"maxSizeBytes": limit, "pageSizeBytes": limit})
                elif config.max_size_bytes > 0:
                    # the positional operation sets every field of the match, so the limit goes with
                    # the page size, which may not exceed it; only PAGE writes page files
                    # (PagingStoreImpl#page), and PAGE is not offered here (Features.missing)
                    limit = threshold(config.max_size_bytes)
                    address.settings["maxSizeBytes"] = limit
                    address.settings["pageSizeBytes"] = min(address.settings["pageSizeBytes"], limit)
            # listMessages shows at most managementBrowsePageSize (default 200) messages
            address.settings["managementBrowsePageSize"] = BROWSE_LIMIT
            self._add_settings(address.physical, address.settings)
            mgmt.exec(mgmt.broker, "createAddress(java.lang.String,java.lang.String)", address.physical,
                      address.routing)
            self.addresses_[name] = address
            self.addresses[name] = address.queues
        return address

    def _apply_settings(self, address: _Address, settings: dict[str, Any]) -> None:
        """Address settings for exactly this address (merged with the catch-all ``#``)."""
        address.settings.update(settings)
        self._add_settings(address.physical, address.settings)

    def _add_settings(self, match: str, settings: dict[str, Any]) -> None:
        """Address settings for `match`: from 2.32 addAddressSettings(match, json) with just these
        (the rest merged from wider matches); before, the positional operation, which sets every one
        of its fields: those not given keep what the match resolves to now (getAddressSettingsAsJSON,
        which names each field as the operation does). A setting the operation lacks is Unsupported
        unless it is unset (-1 or None) or POSITIONAL_SKIPPED."""
        mgmt = self._mgmt()
        if self.features.json_settings:
            mgmt.exec(mgmt.broker, "addAddressSettings(java.lang.String,java.lang.String)", match,
                      json.dumps(settings))
            return
        values = json.loads(mgmt.exec(mgmt.broker, "getAddressSettingsAsJSON(java.lang.String)", match))
        values["addressMatch"] = match
        known = {name for name, _ in POSITIONAL_SETTINGS}
        for key, value in settings.items():
            name = POSITIONAL_NAMES.get(key, key)
            if name in known:
                values[name] = value
            elif key not in POSITIONAL_SKIPPED and value not in (-1, None):
                raise Unsupported(f"address setting {key} on Artemis {self.version} (the positional "
                                  "addAddressSettings before 2.32 has none)")
        arguments = []
        for name, _ in POSITIONAL_SETTINGS:
            if name not in values and name not in ("DLA", "expiryAddress"):  # unset addresses: absent
                raise AdapterError(f"artemis {self.version}: getAddressSettingsAsJSON has no {name}")
            arguments.append(values.get(name))
        mgmt.exec(mgmt.broker, POSITIONAL_OPERATION, *arguments)

    @operation
    def declare_address(self, config: AddressConfig) -> None:
        if config.name in self.addresses:
            raise Refused(f"address {config.name!r} already exists")
        if config.full_policy == "BLOCK" and ("block_policy" not in self.capabilities
                                              or config.max_size_messages >= 0):
            raise Unsupported(self._why("block_policy") if "block_policy" not in self.capabilities
                              else "BLOCK with max_size_messages (AddressSize shows bytes only)")
        if config.max_size_bytes == 0 or config.page_size_bytes <= 0:
            raise Unsupported("max_size_bytes 0 or page_size_bytes <= 0 (no broker threshold matches)")
        if config.retroactive_message_count:
            raise Unsupported("retroactive addresses")
        limited = config.max_size_bytes >= 0 or config.max_size_messages >= 0
        if config.full_policy == "PAGE" and limited and "paging" not in self.capabilities:
            raise Unsupported(self._why("paging"))
        page_limits = (config.page_full_policy is not None or config.page_limit_bytes >= 0
                       or config.page_limit_messages >= 0)
        if page_limits and "page_limits" not in self.capabilities:
            raise Unsupported(self._why("page_limits"))
        if self.sizing is None:
            self.sizing = self._calibrate()
        self._ensure_address(config.name, config)

    def _limit_settings(self, config: AddressConfig) -> dict[str, Any]:
        """PAGING-1, 3, 4, 9, 10: the address settings of a declared address, its logical byte limits
        mapped to broker thresholds (.sizing). Before 2.32 (positional settings) without the read
        budget, which acts only on paged messages and PAGE is not offered there (Features.missing)."""
        budget = threshold(config.read_budget_bytes) if config.read_budget_bytes > 0 else -1
        page = over_threshold(config.page_size_bytes)
        limits: dict[str, Any] = {}
        if config.page_full_policy is not None:  # PAGING-13: a policy acts only with a limit
            limits["pageFullMessagePolicy"] = config.page_full_policy
        if config.page_limit_bytes >= 0:  # PAGING-14: pages allowed = limit // page size, kept exact
            limits["pageLimitBytes"] = (config.page_limit_bytes // config.page_size_bytes) * page
        if config.page_limit_messages >= 0:  # PAGING-15
            limits["pageLimitMessages"] = config.page_limit_messages
        settings = {**limits,
            "addressFullMessagePolicy": config.full_policy,
            "maxSizeMessages": config.max_size_messages,
            "pageSizeBytes": page,
        }
        if self.features.json_settings:
            settings.update({"maxReadPageBytes": budget, "prefetchPageBytes": budget,
                             "maxReadPageMessages": config.max_read_page_messages,
                             "prefetchPageMessages": config.max_read_page_messages})
        return settings

    def _calibrate(self) -> Sizing:
        """The broker's estimate of an AMQP message (.sizing): one message to an address with one
        queue, one to it with two, the address sizes read after each."""
        mgmt = self._mgmt()
        physical = self._physical("calibrate")
        mbean = mgmt.address_mbean(physical)
        mgmt.exec(mgmt.broker, "createAddress(java.lang.String,java.lang.String)", physical, "MULTICAST")
        try:
            sender = self.conn.create_sender(physical)
            deltas = []
            for queues in (1, 2):
                body = {"name": f"{physical}-{queues}", "address": physical, "routing-type": "MULTICAST",
                        "durable": True}
                mgmt.exec(mgmt.broker, "createQueue(java.lang.String,boolean)", json.dumps(body), False)
                before = int(mgmt.read(mbean, "AddressSize")["AddressSize"])
                message = AmqpMessage(body="x" * queues, durable=True, priority=4,
                                      properties={ID_PROPERTY: "calibrate"})
                sender.send(message, timeout=self.timeout)
                deltas.append(int(mgmt.read(mbean, "AddressSize")["AddressSize"]) - before
                              - len(message.encode()))
            sender.close()
        finally:
            mgmt.exec(mgmt.broker, "deleteAddress(java.lang.String,boolean)", physical, True)
        per_ref = deltas[1] - deltas[0]
        return Sizing(offset=deltas[0] - per_ref, per_ref=per_ref)

    @operation
    def declare_queue(self, config: QueueConfig) -> None:
        if config.name in self.queues:
            raise Refused(f"queue {config.name!r} already exists")
        if config.filter is not None:
            raise Unsupported("queue filters")
        if config.ring_size < -1:
            raise Refused("ring_size must be -1 or >= 0")
        if config.redelivery_delay_ms:
            raise Unsupported(self._why("redelivery_delay"))
        if config.single_active_consumer and "single_active_consumer" not in self.capabilities:
            raise Unsupported(self._why("single_active_consumer"))
        address = self._ensure_address(config.address_name, shared=config.address is not None)
        if address.routing == "ANYCAST" and address.queues:
            raise Unsupported("a second queue on another queue's own (anycast) address")
        settings = self._queue_settings(config)
        if address.queues and settings != {k: address.settings.get(k) for k in settings}:
            raise Unsupported("queues with different redelivery settings on one address "
                              "(Artemis' settings are per address)")
        self._apply_settings(address, settings)
        address.expiry_delay = config.message_ttl_ms
        physical = self._physical(config.name)
        body: dict[str, Any] = {"name": physical, "address": address.physical,
                                "routing-type": address.routing, "durable": True}
        if config.ring_size >= 0:
            body["ring-size"] = config.ring_size
        if config.last_value_key is not None:
            body.update({"last-value": True, "last-value-key": config.last_value_key})
        if config.non_destructive:
            body["non-destructive"] = True
        if config.single_active_consumer:  # DELIVERY-26: an exclusive queue (QueueConfiguration EXCLUSIVE)
            body["exclusive"] = True
        mgmt = self._mgmt()
        mgmt.exec(mgmt.broker, "createQueue(java.lang.String,boolean)", json.dumps(body), False)
        address.queues.append(config.name)
        self.queues[config.name] = _Queue(config.name, physical, address.name, address.physical,
                                          address.routing.lower(), config.non_destructive,
                                          config.last_value_key, exclusive=config.single_active_consumer)

    def _queue_settings(self, config: QueueConfig) -> dict[str, Any]:
        """REDELIVERY-*: the address settings a queue declaration stands for."""
        attempts = config.max_delivery_attempts
        settings: dict[str, Any] = {
            "maxDeliveryAttempts": -1 if attempts is None else attempts,
            "redeliveryDelay": config.redelivery_delay_ms,
            "redeliveryMultiplier": float(config.redelivery_multiplier),
        }
        if config.max_redelivery_delay_ms is not None:
            settings["maxRedeliveryDelay"] = config.max_redelivery_delay_ms
        if config.dead_letter is not None:
            settings["deadLetterAddress"] = self._ensure_address(config.dead_letter).physical
        if config.message_ttl_ms is not None:
            settings["expiryDelay"] = config.message_ttl_ms
        if config.expiry_address is not None:
            settings["expiryAddress"] = self._ensure_address(config.expiry_address).physical
        return settings


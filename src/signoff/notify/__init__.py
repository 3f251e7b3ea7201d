"""Notifications: tell people and systems what happened, from the audit chain.

The audit chain is the outbox (written in the transaction of every change);
:class:`Notifier` delivers its events to :class:`WebhookEndpoint` (Standard
Webhooks) and :class:`EmailChannel` destinations with retries, backoff and a
dead-letter state. :class:`AuditFeed` follows a tenant's chain live (the
page's inbox, the MCP elicitation-complete notification).
"""

from signoff.notify._channel import Channel, DeliveryFailed, EventFilter
from signoff.notify._config import ConfigError, NotifyConfig, load_config
from signoff.notify._email import AddressBook, EmailChannel, Recipients, compose, deciders
from signoff.notify._events import EVENT_TYPES, Notification, event_id, event_type_of
from signoff.notify._notifier import Backoff, Notifier
from signoff.notify._recipients import DirectoryRecipients
from signoff.notify._webhook import WebhookEndpoint

__all__ = [
    "EVENT_TYPES",
    "AddressBook",
    "Backoff",
    "Channel",
    "ConfigError",
    "DeliveryFailed",
    "DirectoryRecipients",
    "EmailChannel",
    "EventFilter",
    "Notification",
    "Notifier",
    "NotifyConfig",
    "Recipients",
    "WebhookEndpoint",
    "compose",
    "deciders",
    "event_id",
    "event_type_of",
    "load_config",
]

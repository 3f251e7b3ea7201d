"""Approvals where people already work: Slack and Teams, each chat user linked explicitly.

A chat message shows what the page shows (display and machine values, impact,
risk, deadline, the rationale labelled untrusted) and offers buttons only where
the policy lets a chat surface decide; every click is a signed request verified
with the platform's SDK, turned into one ``Gate.decide`` for the linked person.
``signoff serve`` runs the channels named in ``SIGNOFF_CHANNELS_CONFIG``
(docs/INTEGRATIONS.md).
"""

from typing import TYPE_CHECKING

from signoff.channels._card import Card, CardField, build_card, open_reason
from signoff.channels._config import (
    CONFIG_ENV,
    ChannelsConfig,
    ChannelsConfigError,
    SlackConfig,
    TeamsConfig,
    load_channels_config,
)
from signoff.channels._deciding import Answer, ChatDecision, chat_key
from signoff.channels._include import Channels, include_channels, install_channels
from signoff.channels._links import IdentityLinks

if TYPE_CHECKING:  # needs the `slack` extra (slack-bolt, slack-sdk): imported on first use
    from signoff.channels._slack import Slack, SlackChannel
    from signoff.channels._teams import Teams, TeamsChannel

__all__ = [
    "CONFIG_ENV",
    "Answer",
    "Card",
    "CardField",
    "Channels",
    "ChannelsConfig",
    "ChannelsConfigError",
    "ChatDecision",
    "IdentityLinks",
    "Slack",
    "SlackChannel",
    "SlackConfig",
    "Teams",
    "TeamsChannel",
    "TeamsConfig",
    "build_card",
    "chat_key",
    "include_channels",
    "install_channels",
    "load_channels_config",
    "open_reason",
]


def __getattr__(name: str) -> object:
    from signoff._lazy import resolve

    return resolve(__name__, __file__, name)

"""Slack: the proposal's message to the people who may decide, and their buttons and modals.

Out: a :class:`SlackChannel` is a notification destination (the audit chain is
the outbox): a proposal awaiting confirmation is posted to each linked person
who may decide it (a direct message) and to the conversations configured for
its role; every later event updates every copy (``chat.update``).

In: ``POST /slack/events`` verifies the request's signature with slack_sdk's
``SignatureVerifier`` (five-minute window, on the gate's clock) before Bolt
sees it, then Bolt routes the action. The clicking Slack user becomes a
signoff person only through an explicit link (``IdentityLinks``); an unlinked
user is sent a one-time link to the page instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from slack_bolt import Ack, App, BoltRequest, BoltResponse
from slack_bolt.authorization import AuthorizeResult
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import Clock as SlackClock
from slack_sdk.signature import SignatureVerifier

from signoff._clock import Clock, to_micros
from signoff._model import SLACK_SURFACE, DecisionKind, Principal, Proposal, ProposalStatus
from signoff.channels._card import Card, build_card
from signoff.channels._deciding import (
    ChatDecision,
    chat_key,
    decide,
    describe,
    may_decide,
    suggested,
)
from signoff.channels._links import IdentityLinks
from signoff.channels._slack_blocks import (
    APPROVE,
    APPROVE_MODAL,
    CHANGES,
    CHANGES_MODAL,
    DETAILS_ACTION,
    DETAILS_BLOCK,
    NOTE_BLOCK,
    OPEN,
    REASON_ACTION,
    REASON_BLOCK,
    REJECT,
    REJECT_MODAL,
    RETYPE_PREFIX,
    SUGGEST_PREFIX,
    approve_modal,
    card_blocks,
    changes_modal,
    fallback_text,
    outcome_view,
    reject_modal,
)
from signoff.exceptions import InvalidChatSignature, NotLinked, SignoffError
from signoff.notify import DeliveryFailed, EventFilter, Notification
from signoff.store._sql import ChannelMessage

if TYPE_CHECKING:
    from signoff import Gate
    from signoff.channels._config import SlackConfig

log = logging.getLogger("signoff.channels.slack")
EVENTS = (
    "proposal.awaiting_confirmation",
    "proposal.approved",
    "proposal.rejected",
    "proposal.expired",
    "proposal.cancelled",
    "proposal.revoked",
    "proposal.reminded",
    "proposal.escalated",
    "proposal.reassigned",
)


class _GateClock(SlackClock):
    """slack_sdk's verifier on the gate's injected clock (never the machine's own)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    def now(self) -> float:
        return self._clock.now().timestamp()


class Slack:
    """One Slack app: its workspaces (each mapped to one tenant), clients and Bolt listeners."""

    def __init__(
        self,
        gate: Gate,
        links: IdentityLinks,
        config: SlackConfig,
        *,
        public_url: str,
        env: Mapping[str, str],
    ) -> None:
        self.gate = gate
        self.links = links
        self.config = config
        self.public_url = public_url
        self.tenants = config.tenants()
        self._tokens = config.tokens(env)
        self.verifier = SignatureVerifier(config.secret(env), clock=_GateClock(gate.clock))
        self.app = App(
            signing_secret=config.secret(env),
            authorize=cast(Callable[..., AuthorizeResult], _authorizer(self._tokens)),
            client=WebClient(base_url=config.api_url),
            request_verification_enabled=False,  # verified above Bolt, on the gate's clock
            token_verification_enabled=False,
            process_before_response=True,  # a modal's answer depends on the decision
            raise_error_for_unhandled_request=False,
        )
        self.app.action(APPROVE)(self._on_approve)
        self.app.action(REJECT)(self._on_reject)
        self.app.action(OPEN)(self._on_open)
        self.app.action(CHANGES)(self._on_changes)
        self.app.view(CHANGES_MODAL)(self._on_changes_modal)
        self.app.view(APPROVE_MODAL)(self._on_approve_modal)
        self.app.view(REJECT_MODAL)(self._on_reject_modal)

    # --- in: signed requests -------------------------------------------------------------

    def handle(self, body: bytes, headers: Mapping[str, str]) -> BoltResponse:
        """Verify the signature (slack_sdk), then let Bolt route the action."""
        if not self.verifier.is_valid_request(body, dict(headers)):
            raise InvalidChatSignature(
                "the Slack request signature is missing, wrong or older than five minutes"
            )
        request = BoltRequest(body=body.decode("utf-8"), headers=dict(headers))
        return self.app.dispatch(request)

    def client(self, team_id: str) -> WebClient:
        return WebClient(token=self._tokens[team_id], base_url=self.config.api_url)

    def _on_open(self, ack: Ack) -> None:
        ack()  # a link button: Slack opens the page itself

    def _on_approve(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        ack()
        self._clicked(body, client, DecisionKind.APPROVE)

    def _on_reject(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        ack()
        self._clicked(body, client, DecisionKind.REJECT)

    def _on_changes(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        ack()
        self._clicked(body, client, DecisionKind.REQUEST_CHANGES)

    def _on_changes_modal(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        values = body["view"].get("state", {}).get("values", {})
        note = values.get(NOTE_BLOCK, {}).get("value", {}).get("value")
        fields = {
            block.removeprefix(SUGGEST_PREFIX): suggested(str(entry.get("value", {}).get("value")))
            for block, entry in values.items()
            if block.startswith(SUGGEST_PREFIX) and (entry.get("value", {}).get("value") or "")
        }
        self._submitted(
            ack,
            body,
            client,
            DecisionKind.REQUEST_CHANGES,
            reason=None if not note else str(note).strip(),
            suggestion=fields,
        )

    def _clicked(self, body: dict[str, Any], client: WebClient, kind: DecisionKind) -> None:
        team, user, channel = _who(body)
        try:
            proposal_id, version = _button(body)
            principal = self._principal(team, user)
            proposal = self.gate.proposal(principal, proposal_id)
        except NotLinked:
            self._ask_to_link(client, team, user, channel)
            return
        except SignoffError as exc:
            self._tell(client, channel, user, f"Nothing was decided: {exc.message}.")
            return
        card = self.card(proposal)
        if not card.awaiting or proposal.version != version:
            self._tell(client, channel, user, _state_text(proposal, version))
            self.update_copies(proposal)
            return
        if card.open_reason is not None:
            self._tell(client, channel, user, f"{card.open_reason} Open it: {card.page_url}")
            return
        if kind is DecisionKind.REJECT:
            client.views_open(trigger_id=body["trigger_id"], view=reject_modal(card, channel))
        elif kind is DecisionKind.REQUEST_CHANGES:
            client.views_open(trigger_id=body["trigger_id"], view=changes_modal(card, channel))
        elif card.retype:
            client.views_open(trigger_id=body["trigger_id"], view=approve_modal(card, channel))
        else:
            decision = ChatDecision(proposal_id, version, DecisionKind.APPROVE)
            answer = decide(
                self.gate, principal, decision, key=chat_key(SLACK_SURFACE, team, user, decision)
            )
            self._tell(client, channel, user, answer.text)
            self.update_copies(answer.result.proposal if answer.result else proposal)

    def _on_approve_modal(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        view = body["view"]
        values = view.get("state", {}).get("values", {})
        retyped = {
            block.removeprefix(RETYPE_PREFIX): str(
                entry.get("value", {}).get("value") or ""
            ).strip()
            for block, entry in values.items()
            if block.startswith(RETYPE_PREFIX)
        }
        self._submitted(ack, body, client, DecisionKind.APPROVE, retyped=retyped or None)

    def _on_reject_modal(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        values = body["view"].get("state", {}).get("values", {})
        selected = values.get(REASON_BLOCK, {}).get(REASON_ACTION, {}).get("selected_option")
        details = values.get(DETAILS_BLOCK, {}).get(DETAILS_ACTION, {}).get("value")
        self._submitted(
            ack,
            body,
            client,
            DecisionKind.REJECT,
            reason_code=None if not selected else str(selected.get("value")),
            reason=None if not details else str(details).strip(),
        )

    def _submitted(
        self,
        ack: Ack,
        body: dict[str, Any],
        client: WebClient,
        kind: DecisionKind,
        **content: Any,
    ) -> None:
        team, user, _ = _who(body)
        meta = _metadata(body["view"].get("private_metadata"))
        if meta is None:
            ack(response_action="update", view=outcome_view("Not decided", "This form is stale."))
            return
        proposal_id, version, channel = meta
        try:
            principal = self._principal(team, user)
        except NotLinked:
            ack(
                response_action="update",
                view=outcome_view("Not linked", _link_text(self, team, user)),
            )
            return
        decision = ChatDecision(proposal_id, version, kind, **content)
        answer = decide(
            self.gate, principal, decision, key=chat_key(SLACK_SURFACE, team, user, decision)
        )
        if answer.retype_failed and decision.retyped is not None:
            field = getattr(answer.refusal, "details", {}).get("field")
            block = RETYPE_PREFIX + str(field)
            ack(
                response_action="errors",
                errors={block: "This does not match the proposal. Nothing was decided."},
            )
            return
        title = "Decided" if answer.result is not None else "Not decided"
        ack(response_action="update", view=outcome_view(title, answer.text))
        if channel is not None:
            self._tell(client, channel, user, answer.text)
        with contextlib.suppress(SignoffError):  # not visible to them: nothing to redraw
            self.update_copies(self.gate.proposal(principal, proposal_id))

    def _principal(self, team: str, user: str) -> Principal:
        if team not in self.tenants:
            raise NotLinked("this Slack workspace is not connected to signoff")
        principal = self.links.principal(SLACK_SURFACE, team, user, surface=SLACK_SURFACE)
        if principal.tenant != self.tenants[team]:
            raise NotLinked("this Slack user is linked in another tenant")
        return principal

    def _ask_to_link(self, client: WebClient, team: str, user: str, channel: str | None) -> None:
        self._tell(client, channel, user, _link_text(self, team, user))

    def _tell(self, client: WebClient, channel: str | None, user: str, text: str) -> None:
        if channel is None:
            return
        try:
            client.chat_postEphemeral(channel=channel, user=user, text=text)
        except SlackApiError as exc:
            log.warning("slack: could not answer %s: %s", user, exc.response.get("error"))

    # --- out: messages and their copies ---------------------------------------------------

    def card(self, proposal: Proposal) -> Card:
        try:
            reasons = self.gate.catalog.get(proposal.tool).reasons()
        except SignoffError:
            reasons = None
        return build_card(
            proposal,
            surface=SLACK_SURFACE,
            public_url=self.public_url,
            deployment_surfaces=self.gate.surfaces,
            reasons=reasons,
            time_zone=next(
                (w.time_zone for w in self.config.workspaces if w.tenant == proposal.tenant), None
            ),
        )

    def post(self, proposal: Proposal) -> int:
        """Post the proposal to each person and conversation that has no copy yet."""
        card = self.card(proposal)
        blocks, text = card_blocks(card), fallback_text(card)
        with self.gate.store.read() as tx:
            have = {
                (m.workspace, m.conversation)
                for m in tx.channel_messages(SLACK_SURFACE, proposal.proposal_id)
            }
        posted = 0
        for team, target, recipient in self._targets(proposal):
            client = self.client(team)
            conversation = target
            if recipient is not None:
                opened = client.conversations_open(users=[recipient])
                conversation = str(opened["channel"]["id"])
            if (team, conversation) in have:
                continue
            sent = client.chat_postMessage(channel=conversation, text=text, blocks=blocks)
            self._record(proposal, team, str(sent["channel"]), str(sent["ts"]), recipient)
            posted += 1
        return posted

    def update_copies(self, proposal: Proposal) -> int:
        """Every copy of the proposal's message, redrawn as the proposal is now."""
        card = self.card(proposal)
        blocks, text = card_blocks(card), fallback_text(card)
        with self.gate.store.read() as tx:
            copies = tx.channel_messages(SLACK_SURFACE, proposal.proposal_id)
        for copy in copies:
            self.client(copy.workspace).chat_update(
                channel=copy.conversation,
                ts=copy.message_ref,
                text=text,
                blocks=blocks,
            )
        return len(copies)

    def remind(self, proposal: Proposal) -> int:
        """A reply under every copy: it still waits, and until when (never a new deadline)."""
        card = self.card(proposal)
        text = f"Reminder: this still awaits a decision, before {card.expires_at}."
        with self.gate.store.read() as tx:
            copies = tx.channel_messages(SLACK_SURFACE, proposal.proposal_id)
        for copy in copies:
            self.client(copy.workspace).chat_postMessage(
                channel=copy.conversation, thread_ts=copy.message_ref, text=text
            )
        return len(copies)

    def _targets(self, proposal: Proposal) -> Iterable[tuple[str, str, str | None]]:
        """(team, conversation or user, user) for everyone who may decide, each once."""
        teams = [t for t, tenant in self.tenants.items() if tenant == proposal.tenant]
        if self.config.direct_messages:
            for link in self.links.links(proposal.tenant, channel=SLACK_SURFACE):
                if link.workspace in teams and may_decide(self.gate, link, proposal):
                    yield link.workspace, link.user_id, link.user_id
        for conversation in self.config.conversations:
            if (
                conversation.tenant == proposal.tenant
                and conversation.team_id in teams
                and conversation.role == proposal.required_role
            ):
                yield conversation.team_id, conversation.channel, None

    def _record(
        self, proposal: Proposal, team: str, conversation: str, ts: str, recipient: str | None
    ) -> None:
        with self.gate.store.transaction() as tx:
            tx.add_channel_message(
                ChannelMessage(
                    SLACK_SURFACE,
                    proposal.tenant,
                    proposal.proposal_id,
                    team,
                    conversation,
                    ts,
                    recipient,
                    to_micros(self.gate.clock.now()),
                )
            )


class SlackChannel:
    """The notification destination ``slack:<name>``: post on awaiting, update on the rest."""

    def __init__(self, slack: Slack, *, name: str = "slack", max_attempts: int = 8) -> None:
        self.slack = slack
        self.name = name
        self.max_attempts = max_attempts
        self._filter = EventFilter(EVENTS, set(slack.tenants.values()))

    @property
    def destination(self) -> str:
        return f"slack:{self.name}"

    def accepts(self, event_type: str, tenant: str) -> bool:
        return self._filter.accepts(event_type, tenant)

    def send(self, notification: Notification, now: datetime) -> None:
        proposal_id = notification.data.get("proposal_id")
        if proposal_id is None:
            return
        with self.slack.gate.store.read() as tx:
            proposal = tx.proposal(notification.tenant, str(proposal_id))
        if proposal is None:
            raise DeliveryFailed("the proposal is missing")
        awaiting = proposal.status is ProposalStatus.AWAITING_CONFIRMATION
        try:
            if notification.event_type == "proposal.reminded":
                if awaiting:
                    self.slack.remind(proposal)
            elif notification.event_type in ("proposal.escalated", "proposal.reassigned"):
                self.slack.update_copies(proposal)
                if awaiting:
                    self.slack.post(proposal)  # the people it added, who have no copy yet
            elif notification.event_type != "proposal.awaiting_confirmation":
                self.slack.update_copies(proposal)
            elif awaiting:
                self.slack.post(proposal)
        except SlackApiError as exc:
            raise DeliveryFailed(f"Slack answered {exc.response.get('error')}") from exc
        except OSError as exc:
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        return None


def _authorizer(tokens: Mapping[str, str]) -> Callable[..., AuthorizeResult | None]:
    """Bolt's ``authorize``: the bot token of a configured workspace, else none (refused)."""

    def authorize(enterprise_id: str | None, team_id: str | None) -> AuthorizeResult | None:
        token = None if team_id is None else tokens.get(team_id)
        if token is None:
            return None
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=token)

    return authorize


def _who(body: Mapping[str, Any]) -> tuple[str, str, str | None]:
    user = body.get("user") or {}
    team = (body.get("team") or {}).get("id") or user.get("team_id") or ""
    channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get(
        "channel_id"
    )
    return str(team), str(user.get("id") or ""), None if channel is None else str(channel)


def _button(body: Mapping[str, Any]) -> tuple[str, int]:
    from signoff.exceptions import InvalidRequest

    try:
        value = json.loads(body["actions"][0]["value"])
        proposal_id, version = str(value["p"]), value["v"]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise InvalidRequest("this button carries no proposal") from exc
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidRequest("this button carries no proposal version")
    return proposal_id, version


def _metadata(raw: object) -> tuple[str, int, str | None] | None:
    try:
        value = json.loads(str(raw))
        proposal_id, version, channel = str(value["p"]), value["v"], value.get("c")
    except (KeyError, TypeError, ValueError):
        return None
    if isinstance(version, bool) or not isinstance(version, int):
        return None
    return proposal_id, version, None if channel is None else str(channel)


def _state_text(proposal: Proposal, version: int) -> str:
    if proposal.status is ProposalStatus.AWAITING_CONFIRMATION:
        return (
            f"The proposal changed since this message was drawn (version {version}, now "
            f"{proposal.version}); the message now shows it as it is. Read it again."
        )
    return "This proposal was already decided: " + describe(proposal) + ". Nothing changed."


def _link_text(slack: Slack, team: str, user: str) -> str:
    tenant = slack.tenants.get(team)
    if tenant is None:
        return "This Slack workspace is not connected to signoff."
    code = slack.links.start(SLACK_SURFACE, team, user, tenant)
    return (
        "Your Slack account is not linked to signoff yet, so nothing was decided. Link it once "
        f"by signing in on the confirmation page (the link works once, for 10 minutes): "
        f"{slack.public_url.rstrip('/')}/ui/links/{code}"
    )

"""Microsoft Teams through the Bot Framework SDK: Adaptive Cards with ``Action.Execute``.

In: ``POST /teams/messages`` hands the activity and its ``Authorization`` header to
botbuilder's ``CloudAdapterBase``, whose ``BotFrameworkAuthentication`` verifies the
Bot Connector's JWT (issuer, audience = the bot's app id, signing key from the
published OpenID metadata, the ``msteams`` endorsement, the ``serviceurl`` claim
equal to the activity's) before the bot sees anything. An invoke
``adaptiveCard/action`` from a linked person becomes one ``Gate.decide`` with the
surface ``teams``; its answer is the redrawn card.

Out: a :class:`TeamsChannel` posts the card to each linked person who may decide
and whom the bot can reach (a conversation reference kept when they last wrote
to it or installed it) and to configured channels, and redraws every copy
(``update_activity``) on every later event.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping
from datetime import datetime
from functools import partial
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import jwt
from botbuilder.core import CardFactory, CloudAdapterBase, MessageFactory, TurnContext
from botbuilder.core.teams import TeamsActivityHandler
from botbuilder.schema import (
    Activity,
    AdaptiveCardInvokeResponse,
    AdaptiveCardInvokeValue,
    ChannelAccount,
    ConversationAccount,
    ConversationReference,
    InvokeResponse,
)
from botframework.connector.auth import (
    BotFrameworkAuthenticationFactory,
    PasswordServiceClientCredentialFactory,
    ServiceClientCredentialsFactory,
)

from signoff._clock import to_micros
from signoff._model import TEAMS_SURFACE, DecisionKind, Principal, Proposal, ProposalStatus
from signoff.channels._card import Card, build_card
from signoff.channels._deciding import ChatDecision, chat_key, decide, may_decide
from signoff.channels._links import IdentityLinks
from signoff.channels._teams_card import (
    APPROVE,
    CARD_TYPE,
    CHANGES,
    DETAILS_INPUT,
    NOTE_INPUT,
    REASON_INPUT,
    REJECT,
    RETYPE_PREFIX,
    notice_card,
    teams_card,
)
from signoff.exceptions import (
    InvalidChatSignature,
    InvalidRequest,
    NotLinked,
    SignoffError,
)
from signoff.notify import DeliveryFailed, EventFilter, Notification
from signoff.store._sql import ChannelMessage

if TYPE_CHECKING:
    from signoff import Gate
    from signoff.channels._config import TeamsConfig

log = logging.getLogger("signoff.channels.teams")
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


class Teams:
    """One bot registration: its Entra tenants (each mapped to one signoff tenant)."""

    def __init__(
        self,
        gate: Gate,
        links: IdentityLinks,
        config: TeamsConfig,
        *,
        public_url: str,
        env: Mapping[str, str],
        credentials: ServiceClientCredentialsFactory | None = None,
    ) -> None:
        self.gate = gate
        self.links = links
        self.config = config
        self.public_url = public_url
        self.tenants = config.tenant_map()
        factory = credentials or _credentials(config, env)
        authentication = BotFrameworkAuthenticationFactory.create(
            channel_service="",
            validate_authority=True,
            to_channel_from_bot_login_url=config.login_url,
            to_channel_from_bot_oauth_scope=config.oauth_scope,
            to_bot_from_channel_token_issuer=config.token_issuer,
            oauth_url=config.oauth_url,
            to_bot_from_channel_open_id_metadata_url=config.openid_metadata_url,
            to_bot_from_emulator_open_id_metadata_url=config.openid_metadata_url,
            caller_id="urn:botframework:azure",
            credential_factory=factory,
        )
        self.adapter = CloudAdapterBase(authentication)
        self.bot = _Bot(self)

    # --- in ---------------------------------------------------------------------------

    async def handle(self, body: bytes, authorization: str | None) -> InvokeResponse | None:
        """Verify the Bot Connector's token (botbuilder), then run the bot's turn."""
        try:
            activity = Activity().deserialize(json.loads(body))
        except (ValueError, TypeError, AttributeError) as exc:
            raise InvalidRequest("the body is not a Bot Framework activity") from exc
        if not authorization:
            raise InvalidChatSignature("the Bot Connector token is missing")
        try:
            answer: InvokeResponse | None = await self.adapter.process_activity(
                authorization, activity, self.bot.on_turn
            )
        except (PermissionError, jwt.PyJWTError) as exc:
            raise InvalidChatSignature(
                "the Bot Connector token is not valid for this bot (signature, issuer, "
                "audience, endorsement, service URL or expiry)"
            ) from exc
        return answer

    async def run(self, function: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(partial(function, *args))

    def principal(self, aad_tenant: str, aad_user: str) -> Principal:
        if aad_tenant not in self.tenants:
            raise NotLinked("this Microsoft Entra tenant is not connected to signoff")
        principal = self.links.principal(TEAMS_SURFACE, aad_tenant, aad_user, surface=TEAMS_SURFACE)
        if principal.tenant != self.tenants[aad_tenant]:
            raise NotLinked("this Teams user is linked in another tenant")
        return principal

    def link_text(self, aad_tenant: str, aad_user: str) -> str:
        tenant = self.tenants.get(aad_tenant)
        if tenant is None:
            return "This Microsoft Entra tenant is not connected to signoff."
        code = self.links.start(TEAMS_SURFACE, aad_tenant, aad_user, tenant)
        return (
            "Your Teams account is not linked to signoff yet, so nothing was decided. Link it "
            "once by signing in on the confirmation page (the link works once, for 10 "
            f"minutes): {self.public_url.rstrip('/')}/ui/links/{code}"
        )

    def remember(self, activity: Activity) -> None:
        """Keep where the bot reaches this person (their last conversation with it)."""
        user = activity.from_property
        tenant = _aad_tenant(activity)
        if user is None or not getattr(user, "aad_object_id", None) or tenant is None:
            return
        if activity.conversation is not None and activity.conversation.conversation_type not in (
            None,
            "personal",
        ):
            return  # only a one-to-one chat is "this person"
        reference = TurnContext.get_conversation_reference(activity)
        with self.gate.store.transaction() as tx:
            tx.put_conversation(
                TEAMS_SURFACE,
                tenant,
                str(user.aad_object_id),
                json.dumps(reference.serialize()),
                to_micros(self.gate.clock.now()),
            )

    # --- out --------------------------------------------------------------------------

    def card(self, proposal: Proposal) -> Card:
        try:
            reasons = self.gate.catalog.get(proposal.tool).reasons()
        except SignoffError:
            reasons = None
        return build_card(
            proposal,
            surface=TEAMS_SURFACE,
            public_url=self.public_url,
            deployment_surfaces=self.gate.surfaces,
            reasons=reasons,
            time_zone=next(
                (t.time_zone for t in self.config.tenants if t.tenant == proposal.tenant), None
            ),
        )

    async def post(self, proposal: Proposal) -> int:
        content = teams_card(self.card(proposal))
        with self.gate.store.read() as tx:
            have = {
                (m.workspace, m.conversation)
                for m in tx.channel_messages(TEAMS_SURFACE, proposal.proposal_id)
            }
        posted = 0
        for aad_tenant, reference, recipient in self._targets(proposal):
            conversation = str(reference.conversation.id)
            if (aad_tenant, conversation) in have:
                continue
            activity_id = await self._send(reference, content)
            ref = json.dumps({"activity_id": activity_id, "reference": reference.serialize()})
            with self.gate.store.transaction() as tx:
                tx.add_channel_message(
                    ChannelMessage(
                        TEAMS_SURFACE,
                        proposal.tenant,
                        proposal.proposal_id,
                        aad_tenant,
                        conversation,
                        ref,
                        recipient,
                        to_micros(self.gate.clock.now()),
                    )
                )
            posted += 1
        return posted

    async def update_copies(self, proposal: Proposal) -> int:
        content = teams_card(self.card(proposal))
        with self.gate.store.read() as tx:
            copies = tx.channel_messages(TEAMS_SURFACE, proposal.proposal_id)
        for copy in copies:
            stored = json.loads(copy.message_ref)
            reference = ConversationReference().deserialize(stored["reference"])
            await self._update(reference, str(stored["activity_id"]), content)
        return len(copies)

    async def update_and_post(self, proposal: Proposal) -> int:
        """Redraw every copy, then post to the people an escalation or reassignment added."""
        await self.update_copies(proposal)
        return await self.post(proposal)

    async def remind(self, proposal: Proposal) -> int:
        """A message in every conversation holding a copy: it still waits, until when."""
        text = f"Reminder: this still awaits a decision, before {self.card(proposal).expires_at}."
        with self.gate.store.read() as tx:
            copies = tx.channel_messages(TEAMS_SURFACE, proposal.proposal_id)
        for copy in copies:
            stored = json.loads(copy.message_ref)
            reference = ConversationReference().deserialize(stored["reference"])

            async def send(context: TurnContext) -> None:
                await context.send_activity(MessageFactory.text(text))

            await self.adapter.continue_conversation(reference, send, self.config.app_id)
        return len(copies)

    def _targets(
        self, proposal: Proposal
    ) -> Iterable[tuple[str, ConversationReference, str | None]]:
        aad_tenants = [a for a, tenant in self.tenants.items() if tenant == proposal.tenant]
        if self.config.direct_messages:
            links = self.links.links(proposal.tenant, channel=TEAMS_SURFACE)
            for link in links:
                if link.workspace not in aad_tenants or not may_decide(self.gate, link, proposal):
                    continue
                with self.gate.store.read() as tx:
                    stored = tx.conversation(TEAMS_SURFACE, link.workspace, link.user_id)
                if stored is None:
                    log.info("teams: %s has not talked to the bot yet; not messaged", link.subject)
                    continue
                yield (
                    link.workspace,
                    ConversationReference().deserialize(json.loads(stored)),
                    link.user_id,
                )
        for conversation in self.config.conversations:
            if (
                conversation.tenant == proposal.tenant
                and conversation.aad_tenant_id in aad_tenants
                and conversation.role == proposal.required_role
            ):
                yield (
                    conversation.aad_tenant_id,
                    ConversationReference(
                        channel_id="msteams",
                        service_url=conversation.service_url,
                        bot=ChannelAccount(id=f"28:{self.config.app_id}"),
                        conversation=ConversationAccount(
                            id=conversation.conversation_id,
                            tenant_id=conversation.aad_tenant_id,
                            is_group=True,
                        ),
                    ),
                    None,
                )

    async def _send(self, reference: ConversationReference, content: dict[str, Any]) -> str:
        sent: list[str] = []

        async def send(context: TurnContext) -> None:
            answer = await context.send_activity(
                MessageFactory.attachment(CardFactory.adaptive_card(content))
            )
            sent.append("" if answer is None else str(answer.id))

        await self.adapter.continue_conversation(reference, send, self.config.app_id)
        return sent[0]

    async def _update(
        self, reference: ConversationReference, activity_id: str, content: dict[str, Any]
    ) -> None:
        async def update(context: TurnContext) -> None:
            activity = MessageFactory.attachment(CardFactory.adaptive_card(content))
            activity.id = activity_id
            await context.update_activity(activity)

        await self.adapter.continue_conversation(reference, update, self.config.app_id)


def _credentials(config: TeamsConfig, env: Mapping[str, str]) -> ServiceClientCredentialsFactory:
    """How the bot gets its Entra ID tokens: a named factory, else the app id and password."""
    if config.credentials_factory is not None:
        from signoff._references import build_from_reference

        return build_from_reference(
            config.credentials_factory,
            "teams.credentials_factory",
            ServiceClientCredentialsFactory,
            "a botframework ServiceClientCredentialsFactory",
        )
    return PasswordServiceClientCredentialFactory(
        config.app_id, config.password(env), config.app_tenant_id
    )


class _Bot(TeamsActivityHandler):  # type: ignore[misc]
    def __init__(self, teams: Teams) -> None:
        self.teams = teams

    async def on_turn(self, turn_context: TurnContext) -> None:
        await self.teams.run(self.teams.remember, turn_context.activity)
        await super().on_turn(turn_context)

    async def on_message_activity(self, turn_context: TurnContext) -> None:
        activity = turn_context.activity
        tenant, user = _aad_tenant(activity), _aad_user(activity)
        if tenant is None or user is None:
            return
        try:
            person = await self.teams.run(self.teams.principal, tenant, user)
            text = (
                f"You decide here as {person.subject} in {person.tenant}. Proposals you may "
                "decide arrive in this chat."
            )
        except NotLinked:
            text = await self.teams.run(self.teams.link_text, tenant, user)
        await turn_context.send_activity(MessageFactory.text(text))

    async def on_adaptive_card_invoke(
        self, turn_context: TurnContext, invoke_value: AdaptiveCardInvokeValue
    ) -> AdaptiveCardInvokeResponse:
        activity = turn_context.activity
        action = dict(invoke_value.action or {})
        data = dict(action.get("data") or {})
        tenant, user = _aad_tenant(activity), _aad_user(activity)
        verb = action.get("verb")
        if tenant is None or user is None or verb not in (APPROVE, REJECT, CHANGES):
            return _card_answer(notice_card("This action is not one signoff knows."))
        try:
            proposal_id, version = str(data["p"]), data["v"]
            if isinstance(version, bool) or not isinstance(version, int):
                raise KeyError("v")
        except KeyError:
            return _card_answer(notice_card("This card carries no proposal."))
        try:
            principal = await self.teams.run(self.teams.principal, tenant, user)
        except NotLinked:
            return _card_answer(
                notice_card(await self.teams.run(self.teams.link_text, tenant, user))
            )
        decision = _decision(verb, proposal_id, version, data)
        answer = await self.teams.run(
            lambda: decide(
                self.teams.gate,
                principal,
                decision,
                key=chat_key(TEAMS_SURFACE, tenant, user, decision),
            )
        )
        try:
            proposal = await self.teams.run(self.teams.gate.proposal, principal, proposal_id)
        except SignoffError:
            return _card_answer(notice_card(answer.text))
        await self.teams.update_copies(proposal)
        card = teams_card(self.teams.card(proposal))
        card["body"].insert(0, notice_card(answer.text)["body"][0])
        return _card_answer(card)


def _decision(verb: str, proposal_id: str, version: int, data: Mapping[str, Any]) -> ChatDecision:
    if verb == APPROVE:
        retyped = {
            str(k).removeprefix(RETYPE_PREFIX): str(v).strip()
            for k, v in data.items()
            if str(k).startswith(RETYPE_PREFIX)
        }
        return ChatDecision(proposal_id, version, DecisionKind.APPROVE, retyped=retyped or None)
    if verb == CHANGES:
        note = str(data.get(NOTE_INPUT) or "").strip()
        return ChatDecision(
            proposal_id, version, DecisionKind.REQUEST_CHANGES, reason=note or None, suggestion={}
        )
    code = data.get(REASON_INPUT)
    details = data.get(DETAILS_INPUT)
    return ChatDecision(
        proposal_id,
        version,
        DecisionKind.REJECT,
        reason_code=None if not code else str(code),
        reason=None if not details else str(details).strip(),
    )


def _card_answer(card: dict[str, Any]) -> AdaptiveCardInvokeResponse:
    return AdaptiveCardInvokeResponse(status_code=int(HTTPStatus.OK), type=CARD_TYPE, value=card)


def _aad_tenant(activity: Activity) -> str | None:
    data = activity.channel_data or {}
    tenant = (data.get("tenant") or {}).get("id") if isinstance(data, dict) else None
    if tenant is None and activity.conversation is not None:
        tenant = activity.conversation.tenant_id
    return None if tenant is None else str(tenant)


def _aad_user(activity: Activity) -> str | None:
    user = activity.from_property
    found = None if user is None else getattr(user, "aad_object_id", None)
    return None if not found else str(found)


class TeamsChannel:
    """The notification destination ``teams:<name>``: post on awaiting, redraw on the rest."""

    def __init__(self, teams: Teams, *, name: str = "teams", max_attempts: int = 8) -> None:
        self.teams = teams
        self.name = name
        self.max_attempts = max_attempts
        self._filter = EventFilter(EVENTS, set(teams.tenants.values()))

    @property
    def destination(self) -> str:
        return f"teams:{self.name}"

    def accepts(self, event_type: str, tenant: str) -> bool:
        return self._filter.accepts(event_type, tenant)

    def send(self, notification: Notification, now: datetime) -> None:
        proposal_id = notification.data.get("proposal_id")
        if proposal_id is None:
            return
        with self.teams.gate.store.read() as tx:
            proposal = tx.proposal(notification.tenant, str(proposal_id))
        if proposal is None:
            raise DeliveryFailed("the proposal is missing")
        work: Callable[[], Coroutine[Any, Any, int]]
        awaiting = proposal.status is ProposalStatus.AWAITING_CONFIRMATION
        kind = notification.event_type
        if kind == "proposal.reminded":
            if not awaiting:
                return
            work = partial(self.teams.remind, proposal)
        elif kind in ("proposal.escalated", "proposal.reassigned") and awaiting:
            work = partial(self.teams.update_and_post, proposal)
        elif kind != "proposal.awaiting_confirmation":
            work = partial(self.teams.update_copies, proposal)
        elif awaiting:
            work = partial(self.teams.post, proposal)
        else:
            return
        try:
            asyncio.run(work())  # the notifier's own thread: no loop of its own runs here
        except (OSError, SignoffError) as exc:
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from exc
        except Exception as exc:  # the connector's HTTP errors (msrest) are not typed for us
            raise DeliveryFailed(f"Teams answered {type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        return None

"""Confirmation through MCP elicitation: a form only where the policy allows it, else the page.

Form mode (in-band) is offered only when the tool's policy says ``in_band``,
the risk is low, nothing must be re-typed, and a person is present in the
session. ``accept`` becomes a decision of that person, bound to the proposal
id, version and digest that were shown; ``decline`` declines the proposal;
``cancel`` leaves it awaiting. URL mode points at the confirmation page,
where whoever opens it signs in; its answer records nothing. Which mode was
asked travels in the sealed request state, never in what the client answers.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

from mcp_types import (
    ClientCapabilities,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
)

from signoff._model import (
    Decision,
    DecisionKind,
    DecisionResult,
    Principal,
    Proposal,
    ReasonCode,
)
from signoff._text import visible
from signoff.agents._render import decision_payload
from signoff.agents._service import AgentTools, ToolOutput
from signoff.catalog._types import RiskLevel
from signoff.exceptions import ArgsMismatch, SignoffError

Channel = Literal["form", "url"]
CONFIRM_KEY = "signoff_confirmation"
DECLINE_REASON = "declined in the MCP client"


@dataclass(frozen=True, slots=True)
class Asked:
    """What was put in front of the person: carried in the (sealed) request state."""

    channel: Channel
    proposal_id: str
    version: int
    args_digest: str

    def dump(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def load(cls, text: str) -> Asked:
        data = json.loads(text)
        if data.get("channel") not in ("form", "url"):
            raise ValueError("not a signoff confirmation state")
        return cls(
            channel=data["channel"],
            proposal_id=str(data["proposal_id"]),
            version=int(data["version"]),
            args_digest=str(data["args_digest"]),
        )


def in_band_allowed(proposal: Proposal) -> bool:
    """The policy allows confirmation inside the client, and nothing asks for more."""
    policy = proposal.policy
    return (
        bool(policy.get("in_band"))
        and not policy.get("retype")
        and policy.get("max_age") is None  # a step-up needs the page's sign-in
        and not policy.get("acr_values")
        and proposal.risk.level is RiskLevel.LOW
    )


def choose_channel(
    proposal: Proposal, human: Principal | None, capabilities: ClientCapabilities | None
) -> Channel | None:
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return None
    # A client declaring elicitation without modes supports the form mode only.
    form = elicitation.form is not None or elicitation.url is None
    if form and human is not None and in_band_allowed(proposal):
        return "form"
    if elicitation.url is not None:
        return "url"
    return None


def asked_for(proposal: Proposal, channel: Channel) -> Asked:
    return Asked(channel, proposal.proposal_id, proposal.version, proposal.args_digest)


def form_params(proposal: Proposal) -> ElicitRequestFormParams:
    pid, digest = proposal.proposal_id, proposal.args_digest
    return ElicitRequestFormParams(
        message=_message(proposal),
        requested_schema={
            "type": "object",
            "properties": {
                "confirm": {
                    "type": "boolean",
                    "title": "Confirm exactly this operation",
                    "description": "Submit with this checked to approve; decline to refuse.",
                },
                "proposal_id": {
                    "type": "string",
                    "title": "Proposal",
                    "enum": [pid],
                    "default": pid,
                },
                "args_digest": {
                    "type": "string",
                    "title": "Digest of what you confirm",
                    "enum": [digest],
                    "default": digest,
                },
            },
            "required": ["confirm", "proposal_id", "args_digest"],
        },
    )


def url_params(proposal: Proposal, url: str) -> ElicitRequestURLParams:
    return ElicitRequestURLParams(
        message=(
            f"{visible(proposal.preview.title)}: a person entitled to approve must "
            "open this page, sign in and confirm. Nothing happens until then."
        ),
        url=url,
        elicitation_id=proposal.proposal_id,
    )


def settle(
    tools: AgentTools,
    agent: Principal,
    human: Principal | None,
    asked: Asked,
    answer: ElicitResult | None,
) -> ToolOutput:
    """Turn the person's answer into a decision (form) or a note (URL); then describe."""
    if asked.channel == "url":
        outcome = _URL_OUTCOMES[answer.action if answer is not None else "cancel"]
        return _describe(tools, agent, asked, {"channel": "url", "outcome": outcome, "code": None})
    action = "cancel" if answer is None else answer.action
    if action == "cancel" or human is None:
        # No decision at all: the proposal stays awaiting until someone decides or it expires.
        return _describe(tools, agent, asked, _form("cancelled"))
    try:
        if action == "accept" and _confirmed(asked, answer):
            decided = _decide(tools, human, asked, DecisionKind.APPROVE)
            return _describe(tools, agent, asked, _form("accepted", decision=decided))
        decided = _decide(tools, human, asked, DecisionKind.REJECT)
        return _describe(tools, agent, asked, _form("declined", decision=decided))
    except SignoffError as exc:
        return _describe(tools, agent, asked, _form("refused", exc.code))


_URL_OUTCOMES = {"accept": "opened", "decline": "not_opened", "cancel": "dismissed"}


def _form(
    outcome: str, code: str | None = None, *, decision: DecisionResult | None = None
) -> dict[str, Any]:
    """The confirmation's outcome; with the decision receipt when a decision was recorded."""
    form: dict[str, Any] = {"channel": "form", "outcome": outcome, "code": code}
    if decision is not None:
        form["decision"] = decision_payload(decision)
    return form


def _confirmed(asked: Asked, answer: ElicitResult | None) -> bool:
    """An accepted form approves only when it names the proposal and digest shown; else it raises.

    ``confirm: false`` is an explicit no, recorded as a decline.
    """
    content = (answer.content if answer is not None else None) or {}
    if content.get("proposal_id") != asked.proposal_id or content.get("args_digest") != (
        asked.args_digest
    ):
        raise ArgsMismatch(
            "the confirmation names another proposal or digest than the one shown",
            proposal_id=asked.proposal_id,
        )
    return content.get("confirm") is True


def _decide(
    tools: AgentTools, human: Principal, asked: Asked, kind: DecisionKind
) -> DecisionResult:
    current = tools.gate.proposal(human, asked.proposal_id)
    if current.args_digest != asked.args_digest:
        raise ArgsMismatch("the proposal is not the one shown", proposal_id=asked.proposal_id)
    reject = kind is DecisionKind.REJECT
    return tools.gate.decide(
        human,
        asked.proposal_id,
        Decision(
            kind,
            asked.version,
            reason_code=ReasonCode.OTHER if reject else None,
            reason=DECLINE_REASON if reject else None,
        ),
        # One answer per proposal version and person; never the JSON-RPC request id.
        idempotency_key=f"mcp-elicitation:{asked.proposal_id}:v{asked.version}:{kind.value}",
    )


def _describe(
    tools: AgentTools, agent: Principal, asked: Asked, confirmation: dict[str, Any]
) -> ToolOutput:
    proposal = tools.gate.proposal(agent, asked.proposal_id)
    return tools.describe(agent, proposal, confirmation=confirmation)


def _message(proposal: Proposal) -> str:
    """One line per field; what an agent or requester wrote cannot add or fake a line."""
    preview = proposal.preview
    lines = [f"Confirm: {visible(preview.title)}"]
    lines += [f"  {visible(f.label)}: {visible(f.display_value)}" for f in preview.fields]
    lines += [
        f"Impact: {visible(preview.impact)}",
        f"Reversibility: {visible(preview.reversibility)}",
        f"Requested by {visible(proposal.requester_actor or proposal.requester_subject)} for "
        f"{visible(proposal.requester_subject)}; expires {proposal.expires_at.isoformat()}.",
        f"Proposal {proposal.proposal_id}, digest {proposal.args_digest[:16]}…",
    ]
    return "\n".join(lines)

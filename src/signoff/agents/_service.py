"""Agent tool calls run through the gate: request, execute, status.

The OpenAI dispatcher and the MCP server both call this; neither talks to the
gate on its own. Identity is always the caller's authenticated principal,
never something in the arguments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pydantic

from signoff._model import ExecutionResult, ExecutionStatus, Principal, Proposal, ProposalStatus
from signoff.agents._definitions import (
    MAX_ID_CHARS,
    AgentTool,
    ExecuteArgs,
    MandateArgs,
    StatusArgs,
    agent_tools,
)
from signoff.agents._names import (
    MANDATE_ARGUMENT,
    RESERVED_ARGUMENTS,
    SUPERSEDES_ARGUMENT,
    ToolKind,
    parse_name,
)
from signoff.agents._refusals import refusal_payload
from signoff.agents._render import (
    ConfirmationPages,
    execution_payload,
    mandate_payload,
    proposal_payload,
    receipt_payload,
)
from signoff.exceptions import (
    AlreadyConsumed,
    ArgsMismatch,
    InvalidArguments,
    InvalidState,
    SignoffError,
    SubjectMismatch,
)
from signoff.gate._gate import Gate

RawArguments = Mapping[str, Any] | str | bytes
_OPEN = (ProposalStatus.AWAITING_CONFIRMATION, ProposalStatus.CONFIRMED)
_RESUMABLE = (ExecutionStatus.FAILED_RETRYABLE, ExecutionStatus.UNKNOWN)
ArgsT = TypeVar("ArgsT", bound=pydantic.BaseModel)


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's answer: the JSON payload, whether it is a refusal, and the proposal it is about."""

    payload: dict[str, Any]
    is_error: bool = False
    proposal: Proposal | None = field(default=None, compare=False)

    def json(self) -> str:
        return json.dumps(self.payload, ensure_ascii=False, separators=(",", ":"))


class AgentTools:
    """The agent-facing tools of one gate: their definitions and how each call runs."""

    def __init__(self, gate: Gate, *, pages: ConfirmationPages | None = None) -> None:
        self.gate = gate
        self.pages = pages or ConfirmationPages()
        self.definitions: list[AgentTool] = agent_tools(gate.catalog)
        self._by_name = {tool.name: tool for tool in self.definitions}

    def refresh(self) -> None:
        """Derive the definitions from the catalog again (a gateway's catalog follows its
        upstreams' listings)."""
        definitions = agent_tools(self.gate.catalog)
        self._by_name = {tool.name: tool for tool in definitions}
        self.definitions = definitions

    def call(self, principal: Principal, name: str, arguments: RawArguments) -> ToolOutput:
        """Run one tool call; every protocol refusal becomes a structured answer."""
        write_tool = None
        try:
            parsed = parse_name(name)
            write_tool = parsed.write_tool
            if name not in self._by_name:
                self.gate.catalog.get(write_tool or name)  # raises UnknownTool
            if parsed.kind is ToolKind.REQUEST:
                assert write_tool is not None
                return self._request(principal, write_tool, arguments)
            if parsed.kind is ToolKind.EXECUTE:
                assert write_tool is not None
                args = _parse(ExecuteArgs, arguments)
                return self._execute(principal, write_tool, args)
            if parsed.kind is ToolKind.MANDATE:
                return self.mandate(principal, _parse(MandateArgs, arguments).mandate_id)
            return self.status(principal, _parse(StatusArgs, arguments).proposal_id)
        except SignoffError as exc:
            return refuse(exc, write_tool=write_tool)

    def request(self, principal: Principal, write_tool: str, arguments: RawArguments) -> ToolOutput:
        try:
            return self._request(principal, write_tool, arguments)
        except SignoffError as exc:
            return refuse(exc, write_tool=write_tool)

    def _request(
        self, principal: Principal, write_tool: str, arguments: RawArguments
    ) -> ToolOutput:
        own, reserved = split_reserved(arguments)
        proposal = self.gate.propose(
            principal,
            write_tool,
            own,
            mandate_id=reserved.get(MANDATE_ARGUMENT),
            supersedes=reserved.get(SUPERSEDES_ARGUMENT),
        )
        return self.describe(principal, proposal)

    def _execute(self, principal: Principal, write_tool: str, args: ExecuteArgs) -> ToolOutput:
        proposal = self.gate.proposal(principal, args.proposal_id)
        if proposal.tool != write_tool:
            raise ArgsMismatch(
                f"the proposal is for {proposal.tool}, not {write_tool}",
                proposal_id=proposal.proposal_id,
            )
        try:
            result = self.gate.execute(principal, args.proposal_id, args.confirmation_token)
        except AlreadyConsumed as exc:
            result = self._resume(principal, proposal, exc)
        return ToolOutput(
            execution_payload(
                proposal,
                result.execution,
                result.receipt,
                duplicate=result.duplicate,
                signed_receipt=result.signed_receipt,
            ),
            proposal=proposal,
        )

    def _resume(
        self, principal: Principal, proposal: Proposal, consumed: AlreadyConsumed
    ) -> ExecutionResult:
        """A repeated execute: settle a retryable or unknown attempt by its request key.

        The gate verified the token and its holder before saying "consumed", so
        only the requesting agent gets here. A finished execution stays refused.
        """
        execution = self.gate.execution_for(principal, proposal.proposal_id)
        if execution is None:
            raise consumed
        if execution.status in _RESUMABLE:
            return self.gate.retry(principal, execution.execution_id)
        receipt = None
        if execution.status.is_terminal:
            receipt = receipt_payload(self.gate.receipt(principal, execution.execution_id))
        raise AlreadyConsumed(
            consumed.message,
            proposal_id=proposal.proposal_id,
            execution_id=execution.execution_id,
            execution_status=execution.status.value,
            receipt=receipt,
        ) from consumed

    def status(self, principal: Principal, proposal_id: str) -> ToolOutput:
        try:
            proposal = self.gate.proposal(principal, proposal_id)
            return self.describe(principal, proposal)
        except SignoffError as exc:
            return refuse(exc)

    def mandate(self, principal: Principal, mandate_id: str) -> ToolOutput:
        """A standing approval its circle may see: what is left of it, and its history."""
        return ToolOutput(mandate_payload(self.gate.mandate(principal, mandate_id)))

    def describe(
        self,
        principal: Principal,
        proposal: Proposal,
        *,
        confirmation: dict[str, Any] | None = None,
    ) -> ToolOutput:
        """The proposal as the caller may see it; the token only for its requesting agent."""
        status = proposal.status
        if status in _OPEN and self.gate.clock.now() >= proposal.expires_at:
            status = ProposalStatus.EXPIRED
        token = self._token(principal, proposal) if status is ProposalStatus.CONFIRMED else None
        execution = self.gate.execution_for(principal, proposal.proposal_id)
        receipt = None
        if execution is not None and execution.status.is_terminal:
            receipt = self.gate.receipt(principal, execution.execution_id)
        payload = proposal_payload(
            proposal,
            status=status,
            confirm_url=self.pages.url(proposal.proposal_id),
            token=token,
            execution=execution,
            receipt=receipt,
            confirmation=confirmation,
        )
        return ToolOutput(payload, proposal=proposal)

    def _token(self, principal: Principal, proposal: Proposal) -> str | None:
        try:
            return self.gate.confirmation_token(principal, proposal.proposal_id)
        except (SubjectMismatch, InvalidState):
            return None


def refuse(exc: SignoffError, *, write_tool: str | None = None) -> ToolOutput:
    payload = refusal_payload(exc, write_tool=write_tool)
    return ToolOutput(payload, is_error=payload["kind"] == "refusal")


def split_reserved(arguments: RawArguments) -> tuple[RawArguments, dict[str, str]]:
    """The write tool's own arguments, as sent (a text stays a text), and the reserved
    ``signoff_*`` values that were given (null means not given)."""
    if isinstance(arguments, Mapping):
        parsed: object = arguments
    else:
        text = arguments.decode("utf-8", "replace") if isinstance(arguments, bytes) else arguments
        if not any(name in text for name in RESERVED_ARGUMENTS):
            return arguments, {}
        try:
            parsed = json.loads(text)
        except ValueError:
            return arguments, {}  # the gate refuses malformed JSON with its own answer
    if not isinstance(parsed, Mapping) or not any(n in parsed for n in RESERVED_ARGUMENTS):
        return arguments, {}
    own = {k: v for k, v in parsed.items() if k not in RESERVED_ARGUMENTS}
    reserved: dict[str, str] = {}
    for name in RESERVED_ARGUMENTS:
        value = parsed.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not 0 < len(value) <= MAX_ID_CHARS:
            raise InvalidArguments(
                f"{name} is a proposal or mandate id of 1 to {MAX_ID_CHARS} characters, or null",
                errors=[{"loc": [name], "type": "string_type", "msg": "an id or null"}],
            )
        reserved[name] = value
    if isinstance(arguments, Mapping):
        return own, reserved
    return json.dumps(own, ensure_ascii=False), reserved


def _parse(model: type[ArgsT], raw: RawArguments) -> ArgsT:
    try:
        if isinstance(raw, Mapping):
            return model.model_validate(dict(raw), strict=True)
        return model.model_validate_json(raw, strict=True)
    except pydantic.ValidationError as exc:
        raise InvalidArguments(
            "arguments do not match the tool's schema",
            errors=[
                {"loc": [str(p) for p in e["loc"]], "type": e["type"], "msg": e["msg"]}
                for e in exc.errors(include_url=False, include_input=False)
            ],
        ) from exc

"""An OpenAI function-calling agent in front of signoff: the whole loop, with no network.

    python examples/openai_agent.py

A scripted stand-in plays the model so the example runs anywhere; it answers
the way a careful model would, by reading each tool output's ``kind`` and
``next_step``. To use a real model, swap in :class:`OpenAIChatModel` (below):
``pip install 'signoff[openai]'`` and set ``OPENAI_API_KEY``. Nothing else
changes: the same tool definitions go in, the same dispatcher answers.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Protocol

from signoff import Decision, DecisionKind, Gate, Principal, SQLiteStore
from signoff.agents import OpenAIDispatcher
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders

Message = dict[str, Any]

# Identity comes from your application's authentication, never from the model.
AGENT = Principal("u_42", "acme", actor="agent:support-bot")
APPROVER = Principal("alice", "acme", roles=frozenset({"refund_approver"}))
SYSTEM = (
    "You help customers of the shop. Write tools only create confirmation requests; follow "
    "each tool output's next_step exactly and never invent values the user did not give."
)


class Model(Protocol):
    def respond(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message: ...


class OpenAIChatModel:
    """The real client: Chat Completions with signoff's strict tool definitions."""

    def __init__(self, model: str = "gpt-4.1") -> None:
        from openai import OpenAI  # pip install 'signoff[openai]'

        self.client = OpenAI()
        self.model = model

    def respond(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        completion = self.client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
        )
        reply: Message = completion.choices[0].message.model_dump(exclude_none=True)
        return reply


class ScriptedModel:
    """A stand-in that does what a careful model does with signoff's answers."""

    def __init__(self) -> None:
        self.calls = 0
        self.proposal_id: str | None = None

    def respond(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        last = messages[-1]
        if last["role"] == "user":
            return self._on_user(last["content"])
        return self._on_tool_output(json.loads(last["content"]))

    def _on_user(self, text: str) -> Message:
        if "ord_1001" in text:  # the first request leaves the currency out, as models do
            return self._call("request_refund_order_confirmation", _refund(currency=None))
        if text.strip() == "CNY":
            return self._call("request_refund_order_confirmation", _refund(currency="CNY"))
        return self._call("get_proposal_status", {"proposal_id": self.proposal_id})

    def _on_tool_output(self, output: dict[str, Any]) -> Message:
        if output["kind"] == "clarification":
            return _say(output["question"])
        if output["kind"] == "refusal":
            return _say(f"I could not do that ({output['code']}): {output['next_step']}")
        if output["kind"] == "execution":
            receipt = output["receipt"] or {}
            return _say(
                f"Done: {output['status']}, provider reference "
                f"{receipt.get('provider_reference')}, execution {output['execution_id']}."
            )
        self.proposal_id = output["proposal_id"]
        if output["status"] == "confirmed":
            arguments = {
                "proposal_id": output["proposal_id"],
                "confirmation_token": output["confirmation_token"],
            }
            return self._call("execute_confirmed_refund_order", arguments)
        return _say(
            f"{output['preview']['title']}: nothing has happened yet. A refund approver must "
            f"confirm it at {output['confirm_url']} before {output['expires_at']}."
        )

    def _call(self, name: str, arguments: dict[str, Any]) -> Message:
        self.calls += 1
        call = {
            "id": f"call_{self.calls}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}


def run_turn(
    model: Model, dispatcher: OpenAIDispatcher, messages: list[Message], *, max_steps: int = 8
) -> str:
    """One user turn: let the model call tools until it answers in words."""
    tools = dispatcher.definitions()
    for _ in range(max_steps):
        reply = model.respond(messages, tools)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return str(reply.get("content") or "")
        for call in reply["tool_calls"]:
            function = call["function"]
            # The seam: the model's call, your authenticated principal, the tool output.
            output = dispatcher.dispatch(function["name"], function["arguments"], AGENT)
            print(f"  tool {function['name']} -> {_summary(output)}")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
    raise RuntimeError("the model kept calling tools")


def main(workdir: Path | None = None, model: Model | None = None) -> int:
    with tempfile.TemporaryDirectory(prefix="signoff-openai-") as scratch:
        root = workdir or Path(scratch)
        store = SQLiteStore(root / "signoff.db")
        store.migrate()
        shop = DemoShop(str(root / "shop.sqlite"))
        seed_demo_orders(shop)
        provider = RefundProvider(shop)
        gate = Gate(demo_catalog(shop, provider), store)
        try:
            return _conversation(gate, provider, model or ScriptedModel())
        finally:
            store.close()
            shop.close()


def _conversation(gate: Gate, provider: RefundProvider, model: Model) -> int:
    dispatcher = OpenAIDispatcher(gate, public_url="http://127.0.0.1:8000")
    messages: list[Message] = [{"role": "system", "content": SYSTEM}]
    for text in ("Please refund 19900 on order ord_1001, it arrived broken.", "CNY"):
        _user(messages, text)
        print(f"assistant: {run_turn(model, dispatcher, messages)}")
    # A person opens the confirmation page and approves; here, the same call the page makes.
    proposal = gate.proposals(AGENT)[0]
    gate.decide(
        APPROVER,
        proposal.proposal_id,
        Decision(DecisionKind.APPROVE, proposal.version),
        idempotency_key="page-approve-1",
    )
    print(f"(alice approved {proposal.proposal_id} on the confirmation page)")
    _user(messages, "alice approved it")
    print(f"assistant: {run_turn(model, dispatcher, messages)}")
    ledger = provider.ledger("acme")
    print(f"provider ledger: {[(e.order_id, e.amount_minor, e.currency) for e in ledger]}")
    return 0 if [(e.order_id, e.amount_minor) for e in ledger] == [("ord_1001", 19900)] else 1


def _user(messages: list[Message], text: str) -> None:
    print(f"user: {text}")
    messages.append({"role": "user", "content": text})


def _refund(*, currency: str | None) -> dict[str, Any]:
    return {"order_id": "ord_1001", "amount_minor": 19900, "currency": currency, "reason": "broken"}


def _say(text: str) -> Message:
    return {"role": "assistant", "content": text}


def _summary(output: str) -> str:
    answer = json.loads(output)
    return f"{answer['kind']}: {answer.get('status') or answer.get('code')}"


if __name__ == "__main__":
    sys.exit(main())

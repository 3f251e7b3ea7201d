"""A proposal's card as a Microsoft Teams Adaptive Card (1.4, ``Action.Execute``).

Text that a model, a requester or a tool could have written is a ``TextRun`` in a
``RichTextBlock``: Adaptive Cards render no markdown there, so ``**x**`` or
``[a](url)`` in a value shows literally. Only signoff's own labels are
``TextBlock``s. Re-typed fields are inputs in the card; the reject reasons are
in an ``Action.ShowCard`` with its own ``Action.Execute``.
"""

from __future__ import annotations

from typing import Any

from signoff.channels._card import Card
from signoff.channels._slack_blocks import STATUS_WORDS

APPROVE = "signoff.approve"
REJECT = "signoff.reject"
CHANGES = "signoff.changes"
NOTE_INPUT = "changes_note"
RETYPE_PREFIX = "retype."
REASON_INPUT = "reason_code"
DETAILS_INPUT = "reason"
CARD_TYPE = "application/vnd.microsoft.card.adaptive"


def _run(text: str, **style: Any) -> dict[str, Any]:
    return {"type": "RichTextBlock", "inlines": [{"type": "TextRun", "text": text or " ", **style}]}


def _label(text: str) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text, "weight": "Bolder", "wrap": True, "spacing": "Small"}


def _pair(label: str, value: str) -> list[dict[str, Any]]:
    return [_label(label), _run(value)]


def teams_card(card: Card) -> dict[str, Any]:
    body: list[dict[str, Any]] = [
        _run(card.title, weight="Bolder", size="Large"),
        {
            "type": "TextBlock",
            "wrap": True,
            "isSubtle": True,
            "text": f"{STATUS_WORDS.get(card.status.value, card.status.value)} · "
            f"{card.risk} risk · expires {card.expires_at}",
        },
        *_pair("Operation", card.operation),
        *_pair("Target", card.target),
        _label("Exactly these values will be used (a change needs a new proposal)"),
    ]
    for f in card.fields:
        body.append(_run(f"{f.label} ({f.name})", weight="Bolder"))
        body.append(_run(f"{f.display}\nmachine value: {f.machine}"))
    body += [
        *_pair("Impact", card.impact),
        *_pair("Reversibility", card.reversibility),
        *_pair("External reach", card.external_reach),
        *_pair(
            "Risk", card.risk + (": " + "; ".join(card.risk_reasons) if card.risk_reasons else "")
        ),
        *_pair("Who may approve", card.approvers),
        *_pair("Requested for", card.requester),
        _run(f"Arguments digest {card.digest} · {card.proposal_id}", isSubtle=True, size="Small"),
        {
            "type": "TextBlock",
            "wrap": True,
            "color": "Warning",
            "text": "The agent's explanation — untrusted. Written by the AI model; it is not "
            "checked and not a fact: decide on the values above, never on this text.",
        },
        _run(card.rationale or "(The agent gave no explanation.)", italic=True),
    ]
    body += [_run(line, isSubtle=True) for line in card.decided[:10]]
    actions: list[dict[str, Any]] = []
    data = {"p": card.proposal_id, "v": card.version}
    if card.buttons:
        shown = {f.name: f for f in card.fields}
        for name, label in card.retype:
            field = shown.get(name)
            body.append(
                {
                    "type": "Input.Text",
                    "id": RETYPE_PREFIX + name,
                    "label": f"Re-type the {label.lower()} as shown, to approve",
                    "placeholder": field.display if field else "",
                }
            )
        actions = [
            {
                "type": "Action.Execute",
                "verb": APPROVE,
                "title": "Approve",
                "style": "positive",
                "data": data,
            },
            {
                "type": "Action.ShowCard",
                "title": "Reject…",
                "card": {
                    "type": "AdaptiveCard",
                    "body": [
                        {
                            "type": "Input.ChoiceSet",
                            "id": REASON_INPUT,
                            "label": "Reason for rejecting",
                            "choices": [{"title": t, "value": c} for c, t in card.reasons],
                        },
                        {
                            "type": "Input.Text",
                            "id": DETAILS_INPUT,
                            "label": "Details (optional)",
                            "isMultiline": True,
                            "maxLength": 2000,
                        },
                    ],
                    "actions": [
                        {
                            "type": "Action.Execute",
                            "verb": REJECT,
                            "title": "Reject",
                            "style": "destructive",
                            "data": data,
                        }
                    ],
                },
            },
            {
                "type": "Action.ShowCard",
                "title": "Request changes…",
                "card": {
                    "type": "AdaptiveCard",
                    "body": [
                        {
                            "type": "Input.Text",
                            "id": NOTE_INPUT,
                            "label": "What should the agent change, and why?",
                            "isMultiline": True,
                            "maxLength": 2000,
                        }
                    ],
                    "actions": [
                        {
                            "type": "Action.Execute",
                            "verb": CHANGES,
                            "title": "Send back",
                            "data": data,
                        }
                    ],
                },
            },
            {"type": "Action.OpenUrl", "title": "Open the page", "url": card.page_url},
        ]
    elif card.awaiting:
        body.append(_run(card.open_reason or "Decide on the confirmation page."))
        actions = [{"type": "Action.OpenUrl", "title": "Open to approve", "url": card.page_url}]
    else:
        actions = [{"type": "Action.OpenUrl", "title": "Open", "url": card.page_url}]
    return {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.4",
        "body": body,
        "actions": actions,
    }


def notice_card(text: str) -> dict[str, Any]:
    """A one-line card (answers to the person who clicked)."""
    return {"type": "AdaptiveCard", "version": "1.4", "body": [_run(text)]}

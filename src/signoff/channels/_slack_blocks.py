"""A proposal's card as Slack Block Kit (slack_sdk's block models), and the two modals.

Text that a model, a requester or a tool could have written is sent as
``plain_text`` (never ``mrkdwn``), so ``*``, ``<url|label>`` or ``:emoji:`` in a
value cannot make it read differently; only signoff's own headings are mrkdwn.
"""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    DividerBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
    StaticSelectElement,
)
from slack_sdk.models.views import View

from signoff.channels._card import Card

APPROVE = "signoff.approve"
REJECT = "signoff.reject"
OPEN = "signoff.open"
CHANGES = "signoff.changes"
APPROVE_MODAL = "signoff.approve_modal"
REJECT_MODAL = "signoff.reject_modal"
CHANGES_MODAL = "signoff.changes_modal"
NOTE_BLOCK = "note"
SUGGEST_PREFIX = "suggest."
REASON_BLOCK, REASON_ACTION = "reason_code", "value"
DETAILS_BLOCK, DETAILS_ACTION = "reason", "value"
RETYPE_PREFIX = "retype."
STATUS_WORDS = {
    "awaiting_confirmation": "Awaiting confirmation",
    "declined": "Rejected",
    "changes_requested": "Changes requested — returned to the agent",
    "confirmed": "Confirmed — the agent may now run it",
    "expired": "Expired undecided",
    "cancelled": "Cancelled",
    "revoked": "Revoked",
    "executing": "Running",
    "succeeded": "Succeeded",
    "failed_terminal": "Failed",
    "failed_retryable": "Failed, can be retried",
    "unknown": "Outcome unknown",
    "needs_attention": "Needs a person to check",
}


def _plain(text: str) -> PlainTextObject:
    return PlainTextObject(text=text or " ", emoji=False)


def _md(text: str) -> MarkdownTextObject:
    return MarkdownTextObject(text=text)


def button_value(card: Card) -> str:
    return json.dumps({"p": card.proposal_id, "v": card.version}, separators=(",", ":"))


def fallback_text(card: Card) -> str:
    """The notification text (and what screen readers hear first)."""
    if card.awaiting:
        return f"Awaiting your decision: {card.title}"
    return f"{STATUS_WORDS.get(card.status.value, card.status.value)}: {card.title}"


def card_blocks(card: Card) -> list[dict[str, Any]]:
    blocks: list[Block] = [
        SectionBlock(text=_plain(card.title)),
        ContextBlock(
            elements=[
                _md(f"*{STATUS_WORDS.get(card.status.value, card.status.value)}*"),
                _md(f"*{card.risk} risk*"),
                _plain(f"expires {card.expires_at}"),
            ]
        ),
        SectionBlock(fields=[_md("*Operation*"), _plain(card.operation)]),
        SectionBlock(fields=[_md("*Target*"), _plain(card.target)]),
        *_field_sections(card),
        SectionBlock(
            fields=[
                _md("*Impact*"),
                _plain(card.impact),
                _md("*Reversibility*"),
                _plain(card.reversibility),
                _md("*External reach*"),
                _plain(card.external_reach),
                _md("*Risk*"),
                _plain(
                    card.risk + (": " + "; ".join(card.risk_reasons) if card.risk_reasons else "")
                ),
                _md("*Who may approve*"),
                _plain(card.approvers),
            ]
        ),
        SectionBlock(fields=[_md("*Requested for*"), _plain(card.requester)]),
        ContextBlock(elements=[_plain(f"Arguments digest {card.digest} · {card.proposal_id}")]),
        DividerBlock(),
        SectionBlock(
            text=_md(
                ":warning: *The agent's explanation — untrusted.* Written by the AI model; it is "
                "not checked and not a fact: decide on the values above, never on this text."
            )
        ),
        SectionBlock(text=_plain(card.rationale or "(The agent gave no explanation.)")),
    ]
    if card.decided:
        blocks.append(ContextBlock(elements=[_plain(line) for line in card.decided[:10]]))
    blocks.extend(_actions(card))
    return [block.to_dict() for block in blocks]


def _field_sections(card: Card) -> list[Block]:
    """Each parameter: label and name, display value, machine value (five to a section)."""
    sections: list[Block] = [
        SectionBlock(
            text=_md("*Exactly these values will be used* (a change needs a new proposal)")
        )
    ]
    rows = [
        (f"{f.label} ({f.name})", f"{f.display}\nmachine value: {f.machine}") for f in card.fields
    ]
    for start in range(0, len(rows), 5):
        chunk = rows[start : start + 5]
        sections.append(SectionBlock(fields=[_plain(t) for row in chunk for t in row]))
    return sections


def _actions(card: Card) -> list[Block]:
    if card.buttons:
        return [
            ActionsBlock(
                block_id="decide",
                elements=[
                    ButtonElement(
                        text=_plain("Approve"),
                        action_id=APPROVE,
                        value=button_value(card),
                        style="primary",
                        confirm=None if card.retype else _confirm(card),
                    ),
                    ButtonElement(
                        text=_plain("Reject"),
                        action_id=REJECT,
                        value=button_value(card),
                        style="danger",
                    ),
                    ButtonElement(
                        text=_plain("Request changes"), action_id=CHANGES, value=button_value(card)
                    ),
                    ButtonElement(text=_plain("Open the page"), action_id=OPEN, url=card.page_url),
                ],
            )
        ]
    if card.awaiting:
        return [
            SectionBlock(text=_plain(card.open_reason or "Decide on the confirmation page.")),
            ActionsBlock(
                block_id="open",
                elements=[
                    ButtonElement(
                        text=_plain("Open to approve"),
                        action_id=OPEN,
                        url=card.page_url,
                        style="primary",
                    )
                ],
            ),
        ]
    return [
        ActionsBlock(
            block_id="open",
            elements=[ButtonElement(text=_plain("Open"), action_id=OPEN, url=card.page_url)],
        )
    ]


def _confirm(card: Card) -> ConfirmObject:
    return ConfirmObject(
        title="Approve?",
        text=_plain(f"Approve exactly this: {card.title}"[:300]),
        confirm="Approve",
        deny="Cancel",
    )


def metadata(card: Card, channel_id: str | None) -> str:
    return json.dumps(
        {"p": card.proposal_id, "v": card.version, "c": channel_id}, separators=(",", ":")
    )


def approve_modal(card: Card, channel_id: str | None) -> dict[str, Any]:
    """Re-type the fields the policy names, as shown in the message, then approve."""
    blocks: list[Block] = [SectionBlock(text=_plain(card.title))]
    shown = {f.name: f for f in card.fields}
    for name, label in card.retype:
        field = shown.get(name)
        blocks.append(
            InputBlock(
                block_id=RETYPE_PREFIX + name,
                label=_plain(f"Re-type the {label.lower()} as shown, to confirm it"[:2000]),
                element=PlainTextInputElement(action_id="value"),
                hint=_plain(f"shown as: {field.display}"[:2000]) if field else None,
            )
        )
    view = View(
        type="modal",
        callback_id=APPROVE_MODAL,
        title=_plain("Approve"),
        submit=_plain("Approve"),
        close=_plain("Cancel"),
        private_metadata=metadata(card, channel_id),
        blocks=blocks,
    )
    return view.to_dict()


def reject_modal(card: Card, channel_id: str | None) -> dict[str, Any]:
    view = View(
        type="modal",
        callback_id=REJECT_MODAL,
        title=_plain("Reject"),
        submit=_plain("Reject"),
        close=_plain("Cancel"),
        private_metadata=metadata(card, channel_id),
        blocks=[
            SectionBlock(text=_plain(card.title)),
            InputBlock(
                block_id=REASON_BLOCK,
                label=_plain("Reason for rejecting"),
                element=StaticSelectElement(
                    action_id=REASON_ACTION,
                    placeholder=_plain("Choose a reason…"),
                    options=[
                        Option(value=code, text=_plain(label)) for code, label in card.reasons
                    ],
                ),
            ),
            InputBlock(
                block_id=DETAILS_BLOCK,
                label=_plain("Details (optional)"),
                optional=True,
                element=PlainTextInputElement(
                    action_id=DETAILS_ACTION, multiline=True, max_length=2000
                ),
            ),
        ],
    )
    return view.to_dict()


def changes_modal(card: Card, channel_id: str | None) -> dict[str, Any]:
    """A note, and for any field the value the reviewer suggests (optional)."""
    blocks: list[Block] = [
        SectionBlock(text=_plain(card.title)),
        InputBlock(
            block_id=NOTE_BLOCK,
            label=_plain("What should the agent change, and why?"),
            element=PlainTextInputElement(action_id="value", multiline=True, max_length=2000),
        ),
    ]
    for f in card.fields[:20]:
        blocks.append(
            InputBlock(
                block_id=SUGGEST_PREFIX + f.name,
                label=_plain(f"Suggested {f.label.lower()} (optional)"[:2000]),
                optional=True,
                element=PlainTextInputElement(action_id="value"),
                hint=_plain(f"now: {f.machine}"[:2000]),
            )
        )
    return View(
        type="modal",
        callback_id=CHANGES_MODAL,
        title=_plain("Request changes"),
        submit=_plain("Send back"),
        close=_plain("Cancel"),
        private_metadata=metadata(card, channel_id),
        blocks=blocks,
    ).to_dict()


def outcome_view(title: str, text: str) -> dict[str, Any]:
    """What the modal shows after the decision (``response_action: update``)."""
    return View(
        type="modal",
        title=_plain(title[:24]),
        close=_plain("Close"),
        blocks=[SectionBlock(text=_plain(text))],
    ).to_dict()

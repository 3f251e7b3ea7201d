"""Secure Payment Confirmation: the browser, not the page, shows the amount and the payee.

For a proposal that moves money (a preview field with a ``currency``), the page
asks the browser for an SPC assertion (W3C Secure Payment Confirmation): the
browser's own dialog shows ``payeeName`` and ``total``, and the signed client
data (``type: "payment.get"``) carries exactly what it showed. :func:`spc_display`
derives those values from the proposal's display values — the same function on
the page, at the gate and offline — so a verifier checks that what the person
saw is what was proposed. The challenge is the usual device challenge: it binds
the digest, the version and the approver.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

PAYMENT_GET = "payment.get"
PAYEE_FIELDS = ("payee", "payee_name", "recipient", "beneficiary")
ZERO_DECIMALS = ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX",
                 "UYI", "VND", "VUV", "XAF", "XOF", "XPF")  # fmt: skip
_EXPONENTS = {
    **dict.fromkeys(ZERO_DECIMALS, 0),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}
"""ISO 4217 minor-unit exponents other than 2 (every other currency has 2)."""


class PaymentMismatch(Exception):
    """What the browser showed is not what the proposal displays."""


def major_units(minor: int, currency: str) -> str:
    """``100000`` fen as ``"1000.00"``: an amount in minor units as SPC's decimal string."""
    digits = _EXPONENTS.get(currency.upper(), 2)
    return f"{Decimal(minor).scaleb(-digits):.{digits}f}"


def preview_digest(preview: Mapping[str, Any]) -> str:
    """The digest ``proposal.created`` records of the preview (``preview_digest``)."""
    return hashlib.sha256(json.dumps(preview, sort_keys=True).encode()).hexdigest()


def spc_display(preview: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the browser's dialog shows for this preview: ``payeeName`` (a payee field's
    display value, else the preview's title) and ``total``; None when no money moves."""
    fields = [f for f in preview.get("fields") or () if isinstance(f, Mapping)]
    amount = next(
        (
            f
            for f in fields
            if isinstance(f.get("currency"), str)
            and type(f.get("machine_value")) is int
            and f["machine_value"] >= 0
        ),
        None,
    )
    if amount is None:
        return None
    payee = next((f for f in fields if f.get("name") in PAYEE_FIELDS), None)
    currency = str(amount["currency"]).upper()
    return {
        "payeeName": str(preview.get("title") if payee is None else payee.get("display_value")),
        "total": {"currency": currency, "value": major_units(amount["machine_value"], currency)},
    }


def is_payment_confirmation(client_data_json: str) -> bool:
    """Whether this base64url clientDataJSON is an SPC assertion's (``payment.get``)."""
    try:
        raw = base64.urlsafe_b64decode(client_data_json + "=" * (-len(client_data_json) % 4))
        return bool(json.loads(raw).get("type") == PAYMENT_GET)
    except (ValueError, AttributeError, TypeError):
        return False


def check_shown(client_data: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    """Raise :class:`PaymentMismatch` unless the client data shows ``expected``."""
    shown = client_data.get("payment")
    if not isinstance(shown, Mapping):
        raise PaymentMismatch("the payment confirmation's client data has no payment member")
    total = shown.get("total")
    if shown.get("payeeName") != expected["payeeName"]:
        raise PaymentMismatch(
            f"the browser showed payee {shown.get('payeeName')!r},"
            f" the proposal displays {expected['payeeName']!r}"
        )
    if not isinstance(total, Mapping) or (total.get("currency"), total.get("value")) != (
        expected["total"]["currency"],
        expected["total"]["value"],
    ):
        raise PaymentMismatch(
            f"the browser showed the amount {total!r}, the proposal displays {expected['total']!r}"
        )

"""What the gate signs: its keys, the token form per tool, the checkpoint cadence.

``GateProof`` is optional: a gate without it issues opaque tokens and makes
no checkpoints, exactly as before. With it, tools whose form is ``signed``
get a JWS confirmation token (consumed once by ``jti`` like any other), and
each tenant's log is checkpointed every ``checkpoint_events`` events or
``checkpoint_seconds`` seconds (checked after each write) and at the end of
each execution.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from signoff.proof import KeySet, PublicKeys, origin_for

TokenForm = Literal["opaque", "signed"]
TOKEN_FORMS: tuple[TokenForm, ...] = ("opaque", "signed")


@dataclass(frozen=True, slots=True)
class GateProof:
    """Signing configuration of one deployment (see docs/PROOF.md)."""

    keys: KeySet
    issuer: str
    log_name: str = "signoff"
    token_form: TokenForm = "opaque"  # noqa: S105 - a form name, not a secret
    tool_forms: Mapping[str, TokenForm] = field(default_factory=dict)
    checkpoint_events: int = 64
    checkpoint_seconds: int = 60
    state: _CheckpointState = field(
        default_factory=lambda: _CheckpointState(), repr=False, compare=False
    )

    def __post_init__(self) -> None:
        forms = {self.token_form, *self.tool_forms.values()}
        if not forms <= set(TOKEN_FORMS):
            raise ValueError(f"token forms are {' or '.join(TOKEN_FORMS)}")
        if self.checkpoint_events < 1 or self.checkpoint_seconds < 0:
            raise ValueError("checkpoint_events >= 1 and checkpoint_seconds >= 0")
        self.keys.note_key()  # refuse a key set that cannot sign checkpoints, at start

    def form_for(self, tool: str) -> TokenForm:
        return self.tool_forms.get(tool, self.token_form)

    @property
    def public_keys(self) -> PublicKeys:
        return self.state.public_keys(self.keys)

    def origin(self, tenant: str) -> str:
        return origin_for(self.log_name, tenant)


class _CheckpointState:
    """Per-process memory of each tenant's last checkpoint (a hint; the store decides)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last: dict[str, tuple[int, int]] = {}  # tenant -> (size, made at, µs)
        self._public: PublicKeys | None = None

    def public_keys(self, keys: KeySet) -> PublicKeys:
        if self._public is None:
            self._public = PublicKeys(keys.public_jwks())
        return self._public

"""What the gate signs: its keys, the token form per tool, the checkpoint cadence, the signer.

``GateProof`` is optional: a gate without it issues opaque tokens and makes
no checkpoints, exactly as before. With it, tools whose form is ``signed``
get a JWS confirmation token (consumed once by ``jti`` like any other); each
audit event the gate appends carries a MAC made with the key file's MAC key;
and each tenant's log is checkpointed every ``checkpoint_events`` events or
``checkpoint_seconds`` seconds (checked after each write) and at the end of
each execution, by a signer that remembers what it signed in ``signer``
(outside the store) and submits each checkpoint to ``witnesses``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from signoff.exceptions import SignerRefused
from signoff.proof import KeySet, PublicKeys, origin_for
from signoff.proof._event_mac import EventAuthenticator
from signoff.proof._signer_state import MemorySignerState, SignerState
from signoff.proof._witness import Witness
from signoff.store._q_audit import AuditEntry, EventSeal

TokenForm = Literal["opaque", "signed"]
TOKEN_FORMS: tuple[TokenForm, ...] = ("opaque", "signed")


def log_name_for(public_url: str | None, keys: KeySet) -> str:
    """A globally unique log name: the public URL's host and path, else the key file's own."""
    if public_url:
        parts = urlsplit(public_url)
        return (parts.netloc + parts.path).rstrip("/")
    return keys.log_name


@dataclass(frozen=True, slots=True)
class GateProof:
    """Signing configuration of one deployment (see docs/PROOF.md).

    ``log_name`` defaults to the key file's own (``signoff-<kid>``), so two
    deployments never share an origin; ``signer`` is where the last signed
    view of each log is kept — a directory beside the key file in a real
    deployment (``FileSignerState``), this process's memory by default (tests,
    library use whose store lives as long). ``on_refusal`` is told each time
    the signer refuses (the HTTP app counts them in a Prometheus metric).
    """

    keys: KeySet
    issuer: str
    log_name: str = ""
    token_form: TokenForm = "opaque"  # noqa: S105 - a form name, not a secret
    tool_forms: Mapping[str, TokenForm] = field(default_factory=dict)
    checkpoint_events: int = 64
    checkpoint_seconds: int = 60
    signer: SignerState = field(default_factory=MemorySignerState, compare=False)
    witnesses: tuple[Witness, ...] = ()
    on_refusal: Callable[[SignerRefused], None] | None = field(default=None, compare=False)
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
        if not self.log_name:
            object.__setattr__(self, "log_name", self.keys.log_name)

    def form_for(self, tool: str) -> TokenForm:
        return self.tool_forms.get(tool, self.token_form)

    @property
    def public_keys(self) -> PublicKeys:
        return self.state.public_keys(self.keys)

    @property
    def authenticator(self) -> EventAuthenticator:
        return self.state.authenticator(self.keys)

    def origin(self, tenant: str) -> str:
        return origin_for(self.log_name, tenant)


def seal_with(proof: GateProof) -> EventSeal:
    """The store's event seal: the gate's MAC over each audit entry it appends."""
    return event_seal(proof.authenticator)


def event_seal(authenticator: EventAuthenticator) -> EventSeal:
    """A store's event seal from the key file's MAC keys (any process that writes the log)."""

    def seal(entry: AuditEntry) -> str:
        return authenticator.seal(
            tenant=entry.tenant,
            at=entry.at,
            kind=entry.kind,
            proposal_id=entry.proposal_id,
            execution_id=entry.execution_id,
            actor=entry.actor,
            data=entry.data,
        )

    return seal


class _CheckpointState:
    """Per-process memory: each tenant's last checkpoint (a hint; the signer decides),
    the last refusal per tenant (reported once, retried after ``checkpoint_seconds``),
    and each witness's last size per log."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last: dict[str, tuple[int, int]] = {}  # tenant -> (size, made at, µs)
        self.refused: dict[str, tuple[str, int]] = {}  # tenant -> (code and seq, at µs)
        self.witnessed: dict[tuple[str, str], int] = {}  # (witness, origin) -> size
        self._public: PublicKeys | None = None
        self._authenticator: EventAuthenticator | None = None

    def public_keys(self, keys: KeySet) -> PublicKeys:
        if self._public is None:
            self._public = PublicKeys(keys.public_jwks())
        return self._public

    def authenticator(self, keys: KeySet) -> EventAuthenticator:
        if self._authenticator is None:
            self._authenticator = EventAuthenticator(keys.mac_keys)
        return self._authenticator

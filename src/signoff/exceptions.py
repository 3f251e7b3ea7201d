"""Every refusal signoff can answer, as one rooted hierarchy with stable codes.

    SignoffError
    ├── CatalogError                  tool declared wrongly (a programming error)
    ├── ConfigurationError            nothing started: fix the configuration
    │   ├── InvalidReference          `module:attr` that cannot be imported or used
    │   │   └── CatalogImportError    the catalog's own module fails to import (a syntax error)
    │   ├── MissingExtra              an optional dependency is not installed
    │   ├── InvalidIssuer             a trusted identity issuer is configured wrongly
    │   ├── SigningKeyError           signing key file missing, unreadable or invalid
    │   ├── PolicyFileError           the policy file does not parse or names unknown things
    │   ├── InvalidUpstream           an upstream MCP server (--upstream) is configured wrongly
    │   └── InvalidGatewayPolicy      the [upstreams] part of the policy file is wrong
    ├── StoreError                    storage problem
    │   ├── StoreUnavailable          store unreachable, no outcome known   (503)
    │   ├── SchemaTooNew              database written by a newer signoff
    │   └── InvalidDatabaseUrl        the database URL cannot be parsed
    ├── ProofFormatError              a bundle, receipt or JWKS file that cannot be read
    │   └── NoTrustRoot               a verifier was given no trust root (--jwks / --trust)
    ├── SignerRefused                 the checkpointer would not sign (nothing signed past it)
    │   ├── CheckpointInconsistent    the log shrank or changed since the signer last signed
    │   ├── EventUnauthenticated      an event the gate did not write (no valid MAC), or a replay
    │   └── SignerStateMissing        the store holds checkpoints the signer has no record of
    └── Refusal                       the protocol said no; nothing changed
        ├── InvalidRequest            malformed request                      (400)
        │   ├── InvalidArguments      schema violation, unknown field, bool/float money
        │   └── UnknownTool
        ├── NotAuthenticated          identity missing or invalid            (401)
        │   ├── StepUpRequired        the policy asks for a fresher or stronger sign-in
        │   └── InvalidChatSignature  a chat platform's request signature wrong or stale
        ├── Forbidden                                                        (403)
        │   ├── NotEntitled           approver lacks the role the policy asks
        │   ├── SeparationOfDuties    agent, requester or beneficiary may not approve
        │   ├── SubjectMismatch       token presented by another principal
        │   ├── InvalidToken          token never issued (mistyped or forged)
        │   ├── AudienceMismatch      token meant for another executor
        │   ├── SurfaceNotAllowed     decision from a client system the policy does not list
        │   ├── DeviceSignatureRequired  the policy asks for the approver's passkey
        │   ├── DeviceSignatureInvalid   assertion for another decision, replayed, or unknown key
        │   ├── EvidenceRequired      the policy asks the identity provider to vouch (evidence: idp)
        │   ├── EvidenceInvalid       the provider's token is not its, not yet there, or declined
        │   ├── EvidenceMismatch      the provider's token names another proposal, digest or person
        │   ├── MandateNotApplicable  the mandate does not cover this tool, agent, resource, risk
        │   └── NotLinked             a chat user no explicit link names as a signoff person
        ├── NotFound                  no such id in the caller's tenant      (404)
        │   └── LinkCodeInvalid       a chat link code unknown, used or expired
        ├── Conflict                                                         (409)
        │   ├── VersionConflict       expected_version is stale
        │   ├── InvalidState          proposal is not in a state that allows this
        │   ├── Expired               now >= expires_at (server clock)
        │   │   ├── PreviewExpired    the proposal's deadline passed before a decision
        │   │   ├── TokenExpired      the confirmation expired before this attempt
        │   │   └── MandateExpired    the mandate's validity window closed
        │   ├── AlreadyConsumed       the token was already used
        │   ├── Revoked               confirmation or token revoked
        │   │   └── MandateRevoked    the mandate was revoked, or an approver lost the role
        │   ├── ApproverRevoked       an approver lost their role after approving
        │   ├── RequesterRevoked      the requester lost a role they asked with
        │   ├── ArgsMismatch          digest, operation, resource, policy or request key differ
        │   ├── StateChanged          the business state moved since the preview
        │   ├── ExecutionInProgress   the provider call is running; do not retry
        │   ├── AttemptsExhausted     the tool's max_attempts are used up
        │   ├── IdempotencyKeyInFlight
        │   ├── MandateExceeded       above the mandate's per-write maximum or what is left
        │   └── MandateExhausted      the mandate's count (or budget) is used up
        ├── ClarificationNeeded       arguments ambiguous; ask the person    (422)
        ├── RetypeMismatch            re-typed key value differs from preview (422)
        ├── NotBatchable              approving it needs re-typing, a device or the IdP (422)
        ├── IdempotencyKeyReused      same key, different payload            (422)
        ├── PolicyUndecidable         a policy condition failed to evaluate  (422)
        ├── RateLimited               too many proposals from one agent      (429)
        ├── UpstreamUnavailable       an upstream MCP server cannot be reached; nothing sent (503)
        └── OutcomeUnknown            provider answer lost; look up, never re-run (503)

Each class carries a stable machine ``code``; the HTTP status is a hint for the
edges, which map refusals in one place.
"""

from __future__ import annotations

from typing import Any, ClassVar


class SignoffError(Exception):
    """Root of every error signoff raises on purpose."""

    code: ClassVar[str] = "signoff_error"
    status: ClassVar[int] = 500

    def __init__(self, message: str, /, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = {k: v for k, v in details.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        """Machine-readable form shared by the HTTP, MCP and OpenAI edges."""
        return {"code": self.code, "message": self.message, **self.details}


class CatalogError(SignoffError):
    code = "catalog_error"


class ConfigurationError(SignoffError):
    code = "configuration_error"


class InvalidReference(ConfigurationError):
    code = "invalid_reference"


class CatalogImportError(InvalidReference):
    """The module ``SIGNOFF_CATALOG`` names exists but importing it failed (its own bug)."""

    code = "catalog_import"


class MissingExtra(ConfigurationError):
    code = "missing_extra"


class InvalidIssuer(ConfigurationError, ValueError):
    """An identity issuer's settings (keys, claim mapping, sign-in client) are unusable."""

    code = "invalid_issuer"


class StoreError(SignoffError):
    code = "store_error"


class InvalidDatabaseUrl(StoreError, ValueError):
    code = "invalid_database_url"


class StoreUnavailable(StoreError):
    code = "store_unavailable"
    status = 503


class SchemaTooNew(StoreError):
    code = "schema_too_new"


class Refusal(SignoffError):
    """The protocol refused; the store and the provider are unchanged."""

    code = "refused"
    status = 400


class InvalidRequest(Refusal):
    code = "invalid_request"
    status = 400


class InvalidArguments(InvalidRequest):
    code = "invalid_arguments"


class UnknownTool(InvalidRequest):
    code = "unknown_tool"


class NotAuthenticated(Refusal):
    code = "not_authenticated"
    status = 401


class Forbidden(Refusal):
    code = "forbidden"
    status = 403


class NotEntitled(Forbidden):
    code = "not_entitled"


class SeparationOfDuties(Forbidden):
    code = "separation_of_duties"


class SubjectMismatch(Forbidden):
    code = "subject_mismatch"


class AudienceMismatch(Forbidden):
    code = "audience_mismatch"


class NotFound(Refusal):
    code = "not_found"
    status = 404


class Conflict(Refusal):
    code = "conflict"
    status = 409


class VersionConflict(Conflict):
    code = "version_conflict"


class InvalidState(Conflict):
    code = "invalid_state"


class Expired(Conflict):
    code = "expired"


class AlreadyConsumed(Conflict):
    code = "already_consumed"


class Revoked(Conflict):
    code = "revoked"


class ApproverRevoked(Conflict):
    code = "approver_revoked"


class RequesterRevoked(Conflict):
    """The requester no longer holds a role they held when they asked (the role directory)."""

    code = "requester_revoked"


class ArgsMismatch(Conflict):
    code = "args_mismatch"


class StateChanged(Conflict):
    code = "state_changed"


class ExecutionInProgress(Conflict):
    code = "execution_in_progress"


class IdempotencyKeyInFlight(Conflict):
    code = "idempotency_key_in_flight"


class ClarificationNeeded(Refusal):
    code = "clarification_needed"
    status = 422


class IdempotencyKeyReused(Refusal):
    code = "idempotency_key_reused"
    status = 422


class OutcomeUnknown(Refusal):
    code = "unknown"
    status = 503


class RetypeMismatch(Refusal):
    code = "retype_mismatch"
    status = 422


class InvalidToken(Forbidden):
    """The token is unknown: never issued, mistyped, or forged."""

    code = "invalid_token"


class RateLimited(Refusal):
    """Too many proposals from one agent; ``retry_after_seconds`` says when to try again."""

    code = "rate_limited"
    status = 429


class SigningKeyError(ConfigurationError):
    """The signing key set is missing, unreadable or invalid (a configuration error)."""

    code = "signing_key_error"


class ProofFormatError(SignoffError):
    """A bundle, receipt or JWKS file that is not in the documented format (offline tools)."""

    code = "proof_format"


class NoTrustRoot(ProofFormatError):
    """Nothing verifies without keys obtained apart from what is verified (PROTOCOL rule 16)."""

    code = "no_trust_root"


class SignerRefused(SignoffError):
    """The checkpointer refused to sign: what it was shown is not what it can vouch for.

    ``tenant`` and ``seq`` (the first event it would not cover) name where.
    """

    code = "signer_refused"


class CheckpointInconsistent(SignerRefused):
    """The log is shorter than, or no longer extends, the last tree the signer signed."""

    code = "checkpoint_inconsistent"


class EventUnauthenticated(SignerRefused):
    """An event carries no valid authenticator from the gate, or repeats one (a replay)."""

    code = "event_unauthenticated"


class SignerStateMissing(SignerRefused):
    """The store holds signed checkpoints of a log the signer's state does not know."""

    code = "signer_state_missing"


class SurfaceNotAllowed(Forbidden):
    """The decision came through a client system the policy does not list (rule 14)."""

    code = "surface_not_allowed"


class PreviewExpired(Expired):
    """The proposal's deadline passed before a decision."""

    code = "preview_expired"


class TokenExpired(Expired):
    """The confirmation's validity ended before this execution attempt started."""

    code = "token_expired"


class AttemptsExhausted(Conflict):
    """The tool's ``max_attempts`` were used; no further attempt starts."""

    code = "attempts_exhausted"


class DeviceSignatureRequired(Forbidden):
    """The policy asks for a device-signed approval and none came (enrol a passkey)."""

    code = "device_signature_required"


class DeviceSignatureInvalid(Forbidden):
    """The assertion is for another decision, replayed (counter), or from an unknown key."""

    code = "device_signature_invalid"


class EvidenceRequired(Forbidden):
    """The policy asks the identity provider to vouch for this approval (``evidence: idp``):
    approve through it (CIBA), not with signoff's word alone."""

    code = "evidence_required"


class EvidenceInvalid(Forbidden):
    """The identity provider's answer does not vouch: not signed by it, declined, expired."""

    code = "evidence_invalid"


class EvidenceMismatch(Forbidden):
    """The identity provider's token names another proposal, version, digest or person."""

    code = "evidence_mismatch"


class StepUpRequired(NotAuthenticated):
    """The policy asks the approver's identity provider to authenticate them again (or more
    strongly) before this approval: ``max_age`` and ``acr_values`` say how (RFC 9470)."""

    code = "step_up_required"


class PolicyFileError(ConfigurationError):
    """The policy file (docs/POLICIES.md) does not parse, or names unknown tools or fields.

    ``problems`` lists every finding as ``{code, where, message}``.
    """

    code = "policy_invalid"


class PolicyUndecidable(Refusal):
    """A Cedar condition of the policy could not be evaluated on these arguments: refused,
    never decided by a guess (fix the condition; ``signoff policy check`` validates them)."""

    code = "policy_undecidable"
    status = 422


class MandateNotApplicable(Forbidden):
    """The mandate does not cover this write: another tool, agent, resource, currency, risk,
    or the policy does not let mandates cover it; ``constraint`` names which."""

    code = "mandate_not_applicable"


class MandateExceeded(Conflict):
    """The amount is above the mandate's per-write maximum or above what is left of its
    budget; ``constraint`` names which."""

    code = "mandate_exceeded"


class MandateExhausted(Conflict):
    """The mandate's count (or its whole budget) is used up."""

    code = "mandate_exhausted"


class MandateExpired(Expired):
    """The mandate's validity window closed (or it expired before anyone decided it)."""

    code = "mandate_expired"


class MandateRevoked(Revoked):
    """The mandate was revoked, declined, or ended because an approver lost the role."""

    code = "mandate_revoked"


class InvalidUpstream(ConfigurationError, ValueError):
    """An upstream MCP server's configuration (``--upstream``, ``SIGNOFF_UPSTREAMS``) is wrong."""

    code = "invalid_upstream"


class InvalidGatewayPolicy(ConfigurationError, ValueError):
    """The ``[upstreams]`` part of the policy file cannot be used (docs/GATEWAY.md)."""

    code = "invalid_gateway_policy"


class UpstreamUnavailable(Refusal):
    """An upstream MCP server could not be reached; the request was never sent to it."""

    code = "upstream_unavailable"
    status = 503


class NotLinked(Forbidden):
    """A chat user (Slack, Teams) is not linked to a signoff identity; display names never are."""

    code = "not_linked"


class LinkCodeInvalid(NotFound):
    """A one-time chat link code that is unknown, already used or expired."""

    code = "link_code_invalid"


class InvalidChatSignature(NotAuthenticated):
    """A Slack or Teams request whose signature is missing, wrong, or older than allowed."""

    code = "invalid_chat_signature"


class NotBatchable(Refusal):
    """Approving this proposal needs re-typing, a device signature or the identity provider,
    so it is left out of a batch: decide it on its own."""

    code = "not_batchable"
    status = 422

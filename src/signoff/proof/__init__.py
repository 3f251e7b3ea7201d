"""Proof of consent that survives the database (PROTOCOL rule 13).

Signing keys and their JWKS, the signed confirmation token form, signed
receipts, RFC 9162 Merkle trees, C2SP checkpoints, device-signed approvals,
the signer's own state, audit event authenticators, a witness client, trust
roots, and the offline verifiers. It imports only signoff's primitives,
``cryptography`` and PyJWT — never the store, the gate or the web stack — so
a third party can check what signoff signed with this package alone.
"""

from signoff.proof._bundle import BUNDLE_FORMAT, build_bundle
from signoff.proof._checkpoint import Checkpoint, open_checkpoint, origin_for, sign_checkpoint
from signoff.proof._device import DeviceCheckFailed, device_challenge, verify_device_assertion
from signoff.proof._enrolment import enrolment_nonce, enrolment_refusal, enrolment_vouched
from signoff.proof._event_mac import EventAuthenticator
from signoff.proof._idp import IdpTokenRejected, verify_idp_token
from signoff.proof._jws import KeyWindow, PublicKeys
from signoff.proof._keys import (
    KEYS_ENV,
    KEYS_FILE_ENV,
    PURPOSES,
    KeySet,
    MacKey,
    SigningKey,
    generate_key,
    keyset_from_environment,
    keyset_from_json,
    load_keyset,
)
from signoff.proof._merkle import CompactTree, PartialTree, leaf_hash, root_hash
from signoff.proof._note import Cosigner, parse_vkey
from signoff.proof._receipt import RECEIPT_TYP, evidence_for, proven_executions, sign_receipt
from signoff.proof._report import Expectation, Finding, Report
from signoff.proof._signer_state import (
    STATE_ENV,
    FileSignerState,
    MemorySignerState,
    SignedView,
    SignerState,
    state_directory_for,
)
from signoff.proof._token import (
    CONFIRMATION_TYP,
    ConfirmationClaims,
    sign_confirmation,
    verify_confirmation,
)
from signoff.proof._trust import TRUST_FORMAT, TrustRoot
from signoff.proof._verify_bundle import verify_bundle
from signoff.proof._verify_receipt import read_receipt_file, verify_receipt
from signoff.proof._witness import Witness

__all__ = [
    "BUNDLE_FORMAT",
    "CONFIRMATION_TYP",
    "KEYS_ENV",
    "KEYS_FILE_ENV",
    "PURPOSES",
    "RECEIPT_TYP",
    "STATE_ENV",
    "TRUST_FORMAT",
    "Checkpoint",
    "CompactTree",
    "ConfirmationClaims",
    "Cosigner",
    "DeviceCheckFailed",
    "EventAuthenticator",
    "Expectation",
    "FileSignerState",
    "Finding",
    "IdpTokenRejected",
    "KeySet",
    "KeyWindow",
    "MacKey",
    "MemorySignerState",
    "PartialTree",
    "PublicKeys",
    "Report",
    "SignedView",
    "SignerState",
    "SigningKey",
    "TrustRoot",
    "Witness",
    "build_bundle",
    "device_challenge",
    "enrolment_nonce",
    "enrolment_refusal",
    "enrolment_vouched",
    "evidence_for",
    "generate_key",
    "keyset_from_environment",
    "keyset_from_json",
    "leaf_hash",
    "load_keyset",
    "open_checkpoint",
    "origin_for",
    "parse_vkey",
    "proven_executions",
    "read_receipt_file",
    "root_hash",
    "sign_checkpoint",
    "sign_confirmation",
    "sign_receipt",
    "state_directory_for",
    "verify_bundle",
    "verify_confirmation",
    "verify_device_assertion",
    "verify_idp_token",
    "verify_receipt",
]

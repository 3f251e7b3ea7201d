"""Proof of consent that survives the database (PROTOCOL rule 13).

Signing keys and their JWKS, the signed confirmation token form, signed
receipts, RFC 9162 Merkle trees, C2SP checkpoints, device-signed approvals,
and the offline verifiers. It imports only signoff's primitives,
``cryptography`` and PyJWT — never the store, the gate or the web stack — so
a third party can check what signoff signed with this package alone.
"""

from signoff.proof._bundle import BUNDLE_FORMAT, build_bundle
from signoff.proof._checkpoint import Checkpoint, open_checkpoint, origin_for, sign_checkpoint
from signoff.proof._device import DeviceCheckFailed, device_challenge, verify_device_assertion
from signoff.proof._jws import PublicKeys
from signoff.proof._keys import (
    KEYS_ENV,
    KEYS_FILE_ENV,
    KeySet,
    SigningKey,
    generate_key,
    keyset_from_environment,
    keyset_from_json,
    load_keyset,
)
from signoff.proof._merkle import CompactTree, PartialTree, leaf_hash, root_hash
from signoff.proof._receipt import RECEIPT_TYP, evidence_for, sign_receipt
from signoff.proof._report import Finding, Report
from signoff.proof._token import (
    CONFIRMATION_TYP,
    ConfirmationClaims,
    sign_confirmation,
    verify_confirmation,
)
from signoff.proof._verify_bundle import verify_bundle
from signoff.proof._verify_receipt import read_receipt_file, verify_receipt

__all__ = [
    "BUNDLE_FORMAT",
    "CONFIRMATION_TYP",
    "KEYS_ENV",
    "KEYS_FILE_ENV",
    "RECEIPT_TYP",
    "Checkpoint",
    "CompactTree",
    "ConfirmationClaims",
    "DeviceCheckFailed",
    "Finding",
    "KeySet",
    "PartialTree",
    "PublicKeys",
    "Report",
    "SigningKey",
    "build_bundle",
    "device_challenge",
    "evidence_for",
    "generate_key",
    "keyset_from_environment",
    "keyset_from_json",
    "leaf_hash",
    "load_keyset",
    "open_checkpoint",
    "origin_for",
    "read_receipt_file",
    "root_hash",
    "sign_checkpoint",
    "sign_confirmation",
    "sign_receipt",
    "verify_bundle",
    "verify_confirmation",
    "verify_device_assertion",
    "verify_receipt",
]

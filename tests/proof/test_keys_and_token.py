"""Signing keys, the JWKS, and the signed confirmation token under attack."""

from __future__ import annotations

import base64
import dataclasses
import json
import stat
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from signoff.exceptions import AudienceMismatch, Expired, InvalidToken, SigningKeyError
from signoff.proof import (
    ConfirmationClaims,
    KeySet,
    PublicKeys,
    keyset_from_environment,
    load_keyset,
    sign_confirmation,
    verify_confirmation,
)
from signoff.proof._jws import sign_jws
from signoff.verify import verify_confirmation_token

CLAIMS = ConfirmationClaims(
    iss="https://signoff.test", aud="signoff", sub="u_42", act="agent:support-bot",
    tenant="acme", jti="tok_1", tool="refund_order", tool_version="1", resource="ord_1001",
    args_digest="a" * 64, policy_version="1", request_key="refund_order:acme:ord_1001:act_1",
    iat=1_700_000_000, exp=1_700_000_600,
)  # fmt: skip
NOW = 1_700_000_100


def _keys(keyset: KeySet) -> PublicKeys:
    return PublicKeys(keyset.public_jwks())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_key_file_round_trip_and_permissions(tmp_path: Path) -> None:
    """A saved key set reloads with the same kids; the file is readable by its owner only."""
    keyset = KeySet.generate()
    path = tmp_path / "keys.json"
    keyset.save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = load_keyset(path)
    assert again.active == keyset.active
    assert again.public_jwks() == keyset.public_jwks()


def test_public_jwks_has_no_private_part() -> None:
    """export-jwks material: kty, crv, x (and y), kid, alg, use — never d."""
    jwks = KeySet.generate().rotated("ES256", now=NOW).public_jwks()
    assert all("d" not in key for key in jwks["keys"])
    assert {key["alg"] for key in jwks["keys"]} == {"EdDSA", "ES256"}


def test_rotation_keeps_old_keys_verifying() -> None:
    """A token signed before rotation still verifies after it; new tokens use the new kid."""
    keyset = KeySet.generate()
    old_token = sign_confirmation(keyset.active_key, CLAIMS)
    rotated = keyset.rotated(now=NOW)
    assert rotated.active != keyset.active and len(rotated.keys) == 1
    assert [jwk["kid"] for jwk in rotated.retired] == [keyset.active]
    assert verify_confirmation(old_token, _keys(rotated), audience="signoff", now=NOW) == CLAIMS
    renewed = dataclasses.replace(CLAIMS, iat=NOW, exp=NOW + 600)
    new_token = sign_confirmation(rotated.active_key, renewed)
    assert jwt.get_unverified_header(new_token)["kid"] == rotated.active


def test_keys_from_environment(tmp_path: Path) -> None:
    """SIGNOFF_SIGNING_KEYS holds the JSON; SIGNOFF_SIGNING_KEYS_FILE names a file."""
    keyset = KeySet.generate()
    path = tmp_path / "k.json"
    keyset.save(path)
    from_json = keyset_from_environment({"SIGNOFF_SIGNING_KEYS": keyset.to_json()})
    from_file = keyset_from_environment({"SIGNOFF_SIGNING_KEYS_FILE": str(path)})
    assert from_json is not None and from_file is not None
    assert from_json.active == from_file.active == keyset.active
    assert keyset_from_environment({}) is None


@pytest.mark.parametrize(
    "text",
    ["not json", "{}", '{"keys": []}', '{"keys": [{"kty": "OKP"}]}', '{"active": "x", "keys": []}'],
)
def test_bad_key_files_are_refused(text: str, tmp_path: Path) -> None:
    """A broken key file is a SigningKeyError that says what to do."""
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(SigningKeyError, match="signoff keys generate"):
        load_keyset(path)


def test_es256_key_signs_and_verifies() -> None:
    """The ES256 option works end to end."""
    keyset = KeySet.generate("ES256")
    token = sign_confirmation(keyset.active_key, CLAIMS)
    assert jwt.get_unverified_header(token)["alg"] == "ES256"
    assert verify_confirmation(token, _keys(keyset), audience="signoff", now=NOW) == CLAIMS


def test_token_claims_are_the_protocol_set() -> None:
    """iss aud sub act tenant jti op resource args_digest policy_version request_key iat exp."""
    token = sign_confirmation(KeySet.generate().active_key, CLAIMS)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert set(claims) == {
        "iss", "aud", "sub", "act", "tenant", "jti", "op", "resource", "args_digest",
        "policy_version", "request_key", "iat", "exp",
    }  # fmt: skip
    assert claims["op"] == {"tool": "refund_order", "version": "1"}
    assert claims["act"] == {"sub": "agent:support-bot"}


def test_verify_facade_uses_the_clock_it_is_given() -> None:
    """signoff.verify checks a token with a JWKS alone."""
    keyset = KeySet.generate()
    token = sign_confirmation(keyset.active_key, CLAIMS)
    claims = verify_confirmation_token(token, _keys(keyset), audience="signoff", now=NOW)
    assert claims.jti == "tok_1"


# Attacks -------------------------------------------------------------------------


def test_expired_token_refused_at_exp() -> None:
    """now == exp is expired (server clock)."""
    keyset = KeySet.generate()
    token = sign_confirmation(keyset.active_key, CLAIMS)
    with pytest.raises(Expired):
        verify_confirmation(token, _keys(keyset), audience="signoff", now=CLAIMS.exp)


def test_other_audience_refused() -> None:
    """A token for another executor is refused here."""
    keyset = KeySet.generate()
    token = sign_confirmation(keyset.active_key, CLAIMS)
    with pytest.raises(AudienceMismatch):
        verify_confirmation(token, _keys(keyset), audience="payments", now=NOW)


def test_other_issuer_refused() -> None:
    """A verifier that names its issuer refuses others."""
    keyset = KeySet.generate()
    token = sign_confirmation(keyset.active_key, CLAIMS)
    with pytest.raises(InvalidToken, match="issued by"):
        verify_confirmation(token, _keys(keyset), audience="signoff", now=NOW, issuer="x")


def test_edited_claims_refused() -> None:
    """Changing args_digest in the payload breaks the signature."""
    keyset = KeySet.generate()
    header, payload, signature = sign_confirmation(keyset.active_key, CLAIMS).split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["args_digest"] = "b" * 64
    forged = ".".join([header, _b64(json.dumps(claims).encode()), signature])
    with pytest.raises(InvalidToken, match="signature"):
        verify_confirmation(forged, _keys(keyset), audience="signoff", now=NOW)


def test_unknown_kid_refused() -> None:
    """A kid the JWKS does not hold is refused before any signature check."""
    keyset = KeySet.generate()
    token = sign_confirmation(keyset.active_key, CLAIMS)
    header, payload, signature = token.split(".")
    head = json.loads(base64.urlsafe_b64decode(header + "=="))
    head["kid"] = "nobody"
    forged = ".".join([_b64(json.dumps(head).encode()), payload, signature])
    with pytest.raises(InvalidToken, match="does not trust"):
        verify_confirmation(forged, _keys(keyset), audience="signoff", now=NOW)


def test_another_deployments_key_refused() -> None:
    """A token from another deployment's key does not verify with this JWKS."""
    ours, theirs = KeySet.generate(), KeySet.generate()
    token = sign_confirmation(theirs.active_key, CLAIMS)
    with pytest.raises(InvalidToken):
        verify_confirmation(token, _keys(ours), audience="signoff", now=NOW)
    forged_kid = jwt.encode(
        CLAIMS.to_claims(),
        theirs.active_key.private_key,
        algorithm="EdDSA",
        headers={"kid": ours.active, "typ": "signoff-confirmation+jwt"},
    )
    with pytest.raises(InvalidToken, match="signature"):
        verify_confirmation(forged_kid, _keys(ours), audience="signoff", now=NOW)


def test_alg_other_than_the_keys_refused() -> None:
    """ES256 under an EdDSA kid, HS256 keyed with the public key, and 'none': refused."""
    keyset = KeySet.generate()
    kid = keyset.active
    head = {"kid": kid, "typ": "signoff-confirmation+jwt"}
    es = jwt.encode(CLAIMS.to_claims(), ec.generate_private_key(ec.SECP256R1()), "ES256", head)
    public_x = keyset.public_jwks()["keys"][0]["x"].encode()
    hs = jwt.encode(CLAIMS.to_claims(), public_x * 2, "HS256", head)
    none = ".".join(
        [
            _b64(json.dumps({"alg": "none", **head}).encode()),
            _b64(json.dumps(CLAIMS.to_claims()).encode()),
            "",
        ]
    )
    for forged in (es, hs, none):
        with pytest.raises(InvalidToken):
            verify_confirmation(forged, _keys(keyset), audience="signoff", now=NOW)


def test_receipt_is_not_a_confirmation_token() -> None:
    """A JWS of another type, signed by the same key, is refused as a token."""
    keyset = KeySet.generate()
    other = sign_jws(keyset.active_key, CLAIMS.to_claims(), typ="signoff-receipt+jwt")
    with pytest.raises(InvalidToken, match="expected"):
        verify_confirmation(other, _keys(keyset), audience="signoff", now=NOW)

"""`GET /.well-known/jwks.json`: the public keys that verify what this deployment signs."""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from signoff.exceptions import NotFound
from signoff.http._deps import State
from signoff.http._openapi import problems

router = APIRouter(tags=["proof"])


class PublicJwk(BaseModel):
    """One public key (RFC 7517); never a private member."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kty: str = Field(description="OKP (Ed25519) or EC (P-256)")
    crv: str
    x: str
    y: str | None = Field(None, description="EC keys only")
    kid: str = Field(description="The RFC 7638 thumbprint of the key")
    alg: str = Field(description="EdDSA or ES256")
    use: str = "sig"
    purposes: list[str] = Field(description="What the key may sign: token, receipt, checkpoint")
    not_before: int = Field(description="Valid from (Unix seconds)")
    not_after: int | None = Field(
        None, description="Retired at (Unix seconds): nothing it signed later is valid"
    )


class Jwks(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    keys: list[PublicJwk]


@router.get(
    "/.well-known/jwks.json",
    operation_id="getJwks",
    response_model=Jwks,
    response_model_exclude_none=True,
    responses=problems(404),
    summary="Public keys for signed tokens, receipts and checkpoints (docs/PROOF.md)",
)
async def jwks(state: State, response: Response) -> Jwks:
    """Every key of the key set, the retired ones too, so old signatures still verify."""
    proof = state.gate.proof
    if proof is None:
        raise NotFound("this deployment has no signing keys")
    response.headers["Cache-Control"] = "public, max-age=300"
    return Jwks.model_validate(proof.keys.public_jwks())

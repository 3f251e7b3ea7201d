"""Dependencies shared by the routers: the app state, the caller, the Idempotency-Key."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from signoff._model import Principal
from signoff.exceptions import InvalidRequest, NotAuthenticated
from signoff.http._state import AppState, state_of

MAX_IDEMPOTENCY_KEY = 255
_KEY = re.compile(r"^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,255}$")
# What the header may hold, declared in the OpenAPI document: 1 to 255 printable ASCII
# characters but `"` and `\`, bare or as a structured-field string ("…"), and no
# white space at either end (HTTP strips it before the server sees the value).
_EDGE = r"[\x21\x23-\x5b\x5d-\x7e]"
_INNER = r"[\x20-\x21\x23-\x5b\x5d-\x7e]"
_UNQUOTED = rf"{_EDGE}(?:{_INNER}{{0,253}}{_EDGE})?"
KEY_PATTERN = rf'^(?:{_UNQUOTED}|"{_INNER}{{1,255}}")$'

_bearer = HTTPBearer(
    auto_error=False,
    bearerFormat="JWT",
    scheme_name="bearer",
    description="A JWT with iss, aud, exp, sub, tenant, roles and, for an agent, act.sub",
)


# Cheap dependencies are async on purpose: FastAPI runs a sync one in the thread pool,
# one hand-off per dependency per request.
async def app_state(request: Request) -> AppState:
    return state_of(request.app)


async def current_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The authenticated caller; identity comes from the bearer JWT only."""
    if credentials is None:
        raise NotAuthenticated("an Authorization: Bearer <JWT> header is required")
    return await state_of(request.app).authenticator.authenticate_async(credentials.credentials)


async def idempotency_key(
    key: Annotated[
        str,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=MAX_IDEMPOTENCY_KEY + 2,
            pattern=KEY_PATTERN,
            description='A unique key per logical request (IETF draft: an sf-string, "…")',
        ),
    ],
) -> str:
    """The key, unquoted when sent as a structured-field string; printable ASCII only."""
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not _KEY.match(key):
        raise InvalidRequest(
            f"the Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters",
            header="Idempotency-Key",
        )
    return key


State = Annotated[AppState, Depends(app_state)]
Caller = Annotated[Principal, Depends(current_principal)]
IdempotencyKey = Annotated[str, Depends(idempotency_key)]


async def rate_limited_caller(caller: Caller, state: State) -> Principal:
    """The caller, once counted against its proposal rate limit (``http/_rate_limit.py``)."""
    if state.rate_limit is not None:
        state.rate_limit.check(caller)
    return caller


ProposingCaller = Annotated[Principal, Depends(rate_limited_caller)]

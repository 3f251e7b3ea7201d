"""``/.well-known/oauth-protected-resource``: where a client finds an authorization server.

The RFC 9728 document of the API (``/mcp`` publishes its own at the path-suffixed form,
``mcp_server/_http.py``), in the OpenAPI contract like every other route. Without an
authorization server to name it is a problem+json 404.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from mcp.shared.auth import ProtectedResourceMetadata

from signoff.http._openapi import problems
from signoff.http._problems import problem
from signoff.http._resource import (
    WELL_KNOWN,
    authorization_servers,
    public_url_of,
    resource_metadata,
)
from signoff.http._state import state_of

router = APIRouter(tags=["identity"])
_PUBLIC = {"Cache-Control": "public, max-age=300", "Access-Control-Allow-Origin": "*"}


@router.get(
    WELL_KNOWN,
    operation_id="getProtectedResourceMetadata",
    response_class=JSONResponse,
    responses={
        200: {"model": ProtectedResourceMetadata, "description": "RFC 9728 metadata"},
        **problems(404),
    },
    summary="OAuth 2.0 Protected Resource Metadata: the authorization servers of this API",
)
async def api_resource_metadata(request: Request) -> Response:
    state = state_of(request.app)
    servers = authorization_servers(state)
    if not servers:
        return problem(
            404,
            "not_found",
            "no authorization server is configured: this server takes tokens from issuers "
            "without an http(s) URL (see docs/IDENTITY.md)",
            instance=WELL_KNOWN,
        )
    resource = public_url_of(state.settings)
    return JSONResponse(resource_metadata(resource, servers), headers=_PUBLIC)

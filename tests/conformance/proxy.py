"""A pass-through that adds the bearer token a client obtained (the suite sends none).

The MCP conformance suite's server scenarios connect without credentials. The
token is obtained the way an MCP client obtains one (``tests/demo_oauth.py``: the
demo's authorization server); this proxy only adds it to each request, forwarding
everything else — the Host and Origin headers included, so DNS-rebinding checks still
reach signoff — as is.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import uvicorn
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "content-length"}


def proxy_app(upstream: str, token: str) -> ASGIApp:
    client = httpx.AsyncClient(base_url=upstream, timeout=None)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP]
        headers.append(("authorization", f"Bearer {token}"))
        upstream_request = client.build_request(
            request.method,
            request.url.path,
            params=request.query_params,
            headers=headers,
            content=await request.body(),
        )
        answer = await client.send(upstream_request, stream=True)

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in answer.aiter_raw():
                    yield chunk
            finally:
                await answer.aclose()

        kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP}
        response = StreamingResponse(body(), status_code=answer.status_code, headers=kept)
        await response(scope, receive, send)

    return app


def main() -> None:
    """``python -m tests.conformance.proxy UPSTREAM TOKEN_FILE PORT``: serve until killed."""
    upstream, token_file, port = sys.argv[1:4]
    token = Path(token_file).read_text().strip()
    uvicorn.run(proxy_app(upstream, token), host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main()

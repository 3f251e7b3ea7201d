"""Local stand-ins for the chat platforms' Web APIs on 127.0.0.1, recording what was sent.

No Slack or Teams service is reachable from the test machines: signoff talks to
these through the official SDKs (slack_sdk's ``WebClient(base_url=...)``, the
Bot Framework's service URL), and the tests read what arrived.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    authorization: str | None


@dataclass
class SlackStandIn:
    """Answers Slack Web API methods like Slack would, and keeps each message's latest form."""

    url: str = ""
    calls: list[Call] = field(default_factory=list)
    messages: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    _ts: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(
        self, method: str, args: dict[str, Any], authorization: str | None
    ) -> dict[str, Any]:
        with self._lock:
            self.calls.append(Call(method, args, authorization))
            if method == "conversations.open":
                users = args["users"]
                user = users[0] if isinstance(users, list) else str(users).split(",")[0]
                return {"ok": True, "channel": {"id": f"D{user}"}}
            if method == "chat.postMessage":
                ts = f"{next(self._ts)}.000100"
                self.messages[(args["channel"], ts)] = args
                return {"ok": True, "channel": args["channel"], "ts": ts}
            if method == "chat.update":
                key = (args["channel"], args["ts"])
                if key not in self.messages:
                    return {"ok": False, "error": "message_not_found"}
                self.messages[key] = args
                return {"ok": True, "channel": args["channel"], "ts": args["ts"]}
            if method == "views.open":
                return {"ok": True, "view": {"id": f"V{len(self.calls)}", **args["view"]}}
            return {"ok": True}

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def ephemeral_to(self, user: str) -> list[str]:
        return [
            str(c.args["text"]) for c in self.of("chat.postEphemeral") if c.args["user"] == user
        ]


def _decoded(body: bytes, content_type: str) -> dict[str, Any]:
    if "json" in content_type:
        return dict(json.loads(body or b"{}"))
    args: dict[str, Any] = {}
    for key, value in parse_qsl(body.decode(), keep_blank_values=True):
        if key in ("blocks", "view", "users") and value.startswith(("[", "{")):
            args[key] = json.loads(value)
        else:
            args[key] = value
    return args


@contextmanager
def slack_standin() -> Iterator[SlackStandIn]:
    standin = SlackStandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            args = _decoded(self.rfile.read(length), self.headers.get("content-type") or "")
            args.update(dict(parse_qsl(self.path.partition("?")[2])))
            method = self.path.partition("?")[0].rsplit("/", 1)[-1]
            body = json.dumps(
                standin.answer(method, args, self.headers.get("authorization"))
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    standin.url = f"http://127.0.0.1:{server.server_address[1]}/api/"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class BotStandIn:
    """The Bot Connector: its OpenID metadata and signing keys, and its REST API at the
    service URL (activities posted and updated), recorded."""

    url: str = ""
    jwks: dict[str, Any] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    activities: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def metadata_url(self) -> str:
        return f"{self.url}/openid"

    @property
    def service_url(self) -> str:
        return f"{self.url}/service/"

    def answer(
        self, verb: str, path: str, body: dict[str, Any], authorization: str | None
    ) -> tuple[int, dict[str, Any]]:
        from urllib.parse import unquote

        with self._lock:
            if verb == "GET" and path == "/openid":
                return 200, {
                    "issuer": "https://api.botframework.com",
                    "jwks_uri": f"{self.url}/keys",
                }
            if verb == "GET" and path == "/keys":
                return 200, self.jwks
            parts = [unquote(p) for p in path.split("/")]
            # /service/v3/conversations/<id>/activities[/<activity id>]
            if len(parts) >= 6 and parts[1:4] == ["service", "v3", "conversations"]:
                conversation = parts[4]
                self.calls.append(
                    Call(
                        f"{verb} activities", {**body, "conversation": conversation}, authorization
                    )
                )
                if verb == "PUT":
                    key = (conversation, parts[6])
                    if key not in self.activities:
                        return 404, {"error": {"code": "ActivityNotFound"}}
                    self.activities[key] = body
                    return 200, {"id": parts[6]}
                activity_id = f"act-{next(self._ids)}"
                self.activities[(conversation, activity_id)] = body
                return 201, {"id": activity_id}
            return 404, {}

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def cards_in(self, conversation: str) -> list[dict[str, Any]]:
        with self._lock:
            return [
                a["attachments"][0]["content"]
                for (c, _), a in self.activities.items()
                if c == conversation and a.get("attachments")
            ]

    def texts_to(self, conversation: str) -> list[str]:
        with self._lock:
            return [
                str(c.args.get("text"))
                for c in self.calls
                if c.args.get("conversation") == conversation and c.args.get("text")
            ]


@contextmanager
def bot_standin(jwks: dict[str, Any]) -> Iterator[BotStandIn]:
    standin = BotStandIn(jwks=jwks)

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, verb: str) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else {}
            status, answer = standin.answer(
                verb, self.path.partition("?")[0], body, self.headers.get("authorization")
            )
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def do_PUT(self) -> None:
            self._answer("PUT")

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Received:
    endpoint: str
    payload: dict[str, Any]
    claims: dict[str, Any]
    headers: dict[str, str]


@dataclass
class PushStandIn:
    """A push service (RFC 8030) on 127.0.0.1 that checks the VAPID JWT (RFC 8292) against
    the key in the request and decrypts the aes128gcm body (RFC 8291) with the subscriber's
    private key, as the browser would, before accepting it."""

    url: str = ""
    subscribers: dict[str, tuple[Any, bytes]] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def subscribe(self, name: str) -> dict[str, Any]:
        """What a browser's ``pushManager.subscribe`` returns (``toJSON()``)."""
        import base64
        import os

        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        key = ec.generate_private_key(ec.SECP256R1())
        auth = os.urandom(16)
        point = key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        endpoint = f"{self.url}/push/{name}"
        self.subscribers[endpoint] = (key, auth)

        def b64(raw: bytes) -> str:
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

        return {
            "endpoint": endpoint,
            "expirationTime": None,
            "keys": {"p256dh": b64(point), "auth": b64(auth)},
        }

    def accept(self, endpoint: str, body: bytes, headers: dict[str, str]) -> int:
        import base64
        import time

        import http_ece
        import jwt
        from cryptography.hazmat.primitives.asymmetric import ec

        with self._lock:
            if endpoint in self.gone or endpoint not in self.subscribers:
                return 410
            try:
                scheme, _, params = headers["authorization"].partition(" ")
                fields = dict(p.strip().split("=", 1) for p in params.split(","))
                raw = base64.urlsafe_b64decode(fields["k"] + "=" * (-len(fields["k"]) % 4))
                public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)
                claims = jwt.decode(fields["t"], public, algorithms=["ES256"], audience=self.url)
                assert scheme == "vapid" and str(claims["sub"]).startswith("mailto:")
                assert claims["exp"] <= time.time() + 24 * 3600
                assert headers["content-encoding"] == "aes128gcm"
                key, auth = self.subscribers[endpoint]
                plain = http_ece.decrypt(
                    body, private_key=key, auth_secret=auth, version="aes128gcm"
                )
                payload = json.loads(plain)
            except Exception as exc:  # anything wrong is a refusal, recorded for the test
                self.refused.append(f"{type(exc).__name__}: {exc}")
                return 401
            self.received.append(Received(endpoint, payload, claims, headers))
            return 201


@contextmanager
def push_standin() -> Iterator[PushStandIn]:
    standin = PushStandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status = standin.accept(f"{standin.url}{self.path}", body, headers)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    standin.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()

"""A real webhook receiver on a loopback port, and a notifier over the shared `world`."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from signoff import ManualClock
from signoff.notify import Backoff, Notifier, WebhookEndpoint
from tests.conftest import World

SECRET = "whsec_" + base64.b64encode(b"s" * 32).decode()
PUBLIC_URL = "https://signoff.example"


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """Records every request; answers ``status`` (503 while 'down'); ``delay`` slows each answer."""

    status: int = 204
    delay: float = 0.0
    requests: list[Received] = field(default_factory=list)
    arrived: int = 0
    """Requests whose body was read, answered or not (a sender may die waiting)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def accepted_ids(self) -> list[str]:
        """webhook-ids of the requests this receiver answered with 2xx."""
        with self.lock:
            return [r.headers["webhook-id"] for r in self.requests if r.headers.get("ok") == "1"]

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                with receiver.lock:
                    receiver.arrived += 1
                status = receiver.status
                if receiver.delay:
                    threading.Event().wait(receiver.delay)
                headers = {k.lower(): v for k, v in self.headers.items()}
                headers["ok"] = "1" if 200 <= status < 300 else "0"
                with receiver.lock:
                    receiver.requests.append(Received(headers, body))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.start()
    yield r
    r.stop()


def notifier_for(world: World, *channels: Any, clock: ManualClock, first: float = 1.0) -> Notifier:
    """A notifier on its own clock (real time, so signatures verify), moved by the test."""
    return Notifier(
        world.store,
        list(channels),
        public_url=PUBLIC_URL,
        clock=clock,
        backoff=Backoff(first=timedelta(seconds=first), cap=timedelta(seconds=60)),
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC))


def webhook(receiver: Receiver, **options: Any) -> WebhookEndpoint:
    return WebhookEndpoint("hook", receiver.url, SECRET, **options)

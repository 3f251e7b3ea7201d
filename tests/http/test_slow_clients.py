"""Issue 23: slow-header and slow-body connections are not held forever.

Against a real `signoff serve` (uvicorn), a client trickling its request head or its
body a byte at a time kept the connection open indefinitely. With
`SIGNOFF_REQUEST_READ_SECONDS=1` the server answers 408 and closes the connection
before the client has sent even half of it; a normal request on the same server works.
The loops are bounded by bytes, not by time.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.serving import clean_env, serving

HEAD = (
    b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slowloris\r\n"
    b"X-Padding: " + b"a" * 40 + b"\r\n\r\n"
)
BODY = b'{"tool": "refund_order", "arguments": {}}'
TRICKLE = 0.1  # seconds between bytes: far slower than any real client


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("slow") / "signoff.db"
    env = clean_env(SIGNOFF_REQUEST_READ_SECONDS="1")
    with serving(["--demo", "--db", str(db)], env=env) as url:
        yield url


def _connect(base_url: str) -> socket.socket:
    parts = urlsplit(base_url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _trickle(sock: socket.socket, data: bytes) -> tuple[int, bytes]:
    """Send ``data`` a byte at a time; how many bytes went out before the server answered."""
    sock.settimeout(TRICKLE)
    for sent, byte in enumerate(data):
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return sent, b""
        try:
            answer = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            return sent, b""
        return sent, answer
    return len(data), b""


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off(base_url: str) -> None:
    with _connect(base_url) as sock:
        sent, answer = _trickle(sock, HEAD)
    assert sent < len(HEAD) // 2
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408")


def test_a_body_sent_a_byte_at_a_time_is_cut_off(base_url: str) -> None:
    head = (
        b"POST /v1/proposals HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(BODY) * 4).encode() + b"\r\n\r\n"
    )
    with _connect(base_url) as sock:
        sock.sendall(head)
        sent, answer = _trickle(sock, BODY * 4)
    assert sent < len(BODY) * 2
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_a_normal_client_is_served(base_url: str) -> None:
    assert httpx.get(f"{base_url}/healthz", timeout=10).status_code == 200


def test_the_setting_is_bounded(tmp_path: Path) -> None:
    from signoff.http import Settings

    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Settings(demo=True, request_read_seconds=0)

"""Regenerate docs/ui-inbox.png and docs/ui-detail.png from a real `signoff serve --demo`.

    .venv/bin/python scripts/ui_screenshots.py            # writes docs/ui-*.png
    .venv/bin/python scripts/ui_screenshots.py --out /tmp  # somewhere else

It does what a person would: starts the demo server on a free port with a
throwaway database, has the demo agent (u_42 via agent:support-bot) ask for a
¥49.00 refund on ord_1099 and a high-risk ¥1,299.00 refund on the seeded
ord_9200 over HTTP, signs in to the page as alice in Debian's chromium
(headless; `apt-get install chromium`) and takes the two screenshots. Needs the
dev dependencies (`pip install -e '.[dev]'`: playwright, httpx).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

from signoff.client import SignoffClient

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu"]
AGENT = ("--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot")
REFUNDS = (
    ("ord_1099", 4900, "Customer reports the lid was cracked on arrival."),
    (
        "ord_9200",
        129_900,
        "The customer returned the espresso machine unopened; policy allows a refund.",
    ),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where the PNGs go")
    parser.add_argument("--chromium", default=CHROMIUM, help="the chromium executable")
    options = parser.parse_args()
    if not Path(options.chromium).exists():
        print(f"error: {options.chromium} is missing — apt-get install chromium", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch, demo_server(Path(scratch)) as base:
        detail = propose(base)
        for name, png in screenshots(base, detail, options.chromium).items():
            (options.out / name).write_bytes(png)
            print(f"wrote {options.out / name}")
    return 0


@contextmanager
def demo_server(scratch: Path) -> Iterator[str]:
    """`signoff serve --demo` on a free port, with its database in ``scratch``."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "signoff", "serve", "--demo", "--port", str(port)]
    server = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
        [*command, "--db", str(scratch / "signoff.db"), "--log-level", "warning"],
        env=clean_env(),
        cwd=scratch,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server)
        yield base
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_")}


def wait_ready(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("error: signoff serve --demo exited before it was ready")
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("error: signoff serve --demo was not ready within 120 s")


def propose(base: str) -> str:
    """The agent's two refunds; the id of the high-risk one."""
    token = subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-m", "signoff", "dev-token", "--demo", *AGENT],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(),
    ).stdout.strip()
    with SignoffClient(base, token) as agent:
        ids = [
            agent.propose(
                "refund_order",
                {"order_id": order, "amount_minor": amount, "currency": "CNY", "reason": None},
                rationale=rationale,
            ).proposal_id
            for order, amount, rationale in REFUNDS
        ]
    return ids[-1]


def screenshots(base: str, detail: str, chromium: str) -> dict[str, bytes]:
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_context(viewport={"width": 800, "height": 480}).new_page()
            page.goto(f"{base}/ui/sign-in")
            page.get_by_role("button", name="Sign in as alice").click()
            page.wait_for_url(re.compile(r"/ui/inbox$"))
            shots = {"ui-inbox.png": page.screenshot(full_page=True)}
            page.set_viewport_size({"width": 800, "height": 900})
            page.goto(f"{base}/ui/proposals/{detail}")
            page.get_by_label(re.compile("Re-type the amount")).focus()
            shots["ui-detail.png"] = page.screenshot(full_page=True)
        finally:
            browser.close()
    return shots


if __name__ == "__main__":
    raise SystemExit(main())

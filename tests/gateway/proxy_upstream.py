"""A stdio pass-through in front of a real MCP server, for the gateway tests.

    python proxy_upstream.py --log LOG [--die-on-call TOOL --armed FILE] [--patch-schema FILE]
        -- COMMAND ...

Every message signoff sends is appended to LOG (one JSON object per line), so a
test counts the ``tools/call`` requests the real server received, across
restarts. ``--die-on-call TOOL``: once FILE exists, the answer of the real server
to a call of TOOL is not forwarded — the server and this proxy are killed after
the server acted (the upstream died mid-call). ``--patch-schema FILE``: while FILE
exists, the tool it names gets one more optional property in ``tools/list`` (a
changed upstream schema), or, written ``-TOOL``, leaves the listing. ``--down FILE``:
while FILE exists, the proxy exits at once (the upstream cannot be started).
SIGUSR1 sends ``notifications/tools/list_changed``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

_write = threading.Lock()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--die-on-call")
    parser.add_argument("--armed")
    parser.add_argument("--patch-schema")
    parser.add_argument("--down")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    if options.down and Path(options.down).exists():
        sys.exit(3)  # the upstream cannot be started now
    command = [c for c in options.command if c != "--"]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    calls: dict[Any, str] = {}
    child_in = child.stdin
    listings: set[Any] = set()

    def log(entry: dict[str, Any]) -> None:
        with open(options.log, "a", encoding="utf-8") as file:
            file.write(json.dumps(entry) + "\n")

    def send(message: dict[str, Any]) -> None:
        assert sys.stdout is not None
        with _write:
            sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
            sys.stdout.buffer.flush()

    def inbound() -> None:
        for line in sys.stdin.buffer:
            message = json.loads(line)
            method = message.get("method")
            params = message.get("params") or {}
            log({"pid": os.getpid(), "method": method, "name": params.get("name")})
            if method == "tools/call":
                calls[message.get("id")] = str(params.get("name"))
            elif method == "tools/list":
                listings.add(message.get("id"))
            child_in.write(line)
            child_in.flush()
        child.terminate()

    signal.signal(
        signal.SIGUSR1,
        lambda *_: send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
    )
    threading.Thread(target=inbound, daemon=True).start()
    for line in child.stdout:
        message = json.loads(line)
        ident = message.get("id")
        armed = options.armed is not None and Path(options.armed).exists()
        if options.die_on_call and armed and calls.get(ident) == options.die_on_call:
            log({"pid": os.getpid(), "died_after": options.die_on_call})
            child.kill()
            os._exit(1)
        if ident in listings and options.patch_schema and Path(options.patch_schema).exists():
            patched = Path(options.patch_schema).read_text().strip()
            result = message.get("result", {})
            if patched.startswith("-"):  # the tool leaves the listing
                result["tools"] = [t for t in result.get("tools", []) if t["name"] != patched[1:]]
            for tool in result.get("tools", []):
                if tool.get("name") == patched:
                    tool["inputSchema"].setdefault("properties", {})["mode"] = {"type": "string"}
        send(message)


if __name__ == "__main__":
    main()

"""Resident memory of `signoff serve --demo` beside a bare FastAPI app, idle and after N flows.

    .venv/bin/python benchmarks/bench_memory.py [--flows 10000] [--clients 8]

Both servers run under uvicorn on this machine, one process each: the bare app
is FastAPI with one route returning a constant. RSS (``VmRSS`` of
``/proc/PID/status``) is read once each is ready and has answered a few
requests, then after the load: N full flows over HTTP against signoff
(propose, approve, pick up the token, execute: four requests each, from
``--clients`` clients at once, each refunding its own orders), and the same
number of requests against the bare app. Targets (issue 13): idle RSS of
signoff ≤ 1.3 × the bare app's; growth over the flows ≤ 10 %.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_http

BARE_APP = """
from fastapi import FastAPI

app = FastAPI()


@app.get("/ping")
def ping() -> dict[str, str]:
    return {"status": "ok"}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flows", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--warm", type=int, default=100, help="flows before the warm figure")
    options = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="signoff-memory-"))
    (workdir / "bare_app.py").write_text(BARE_APP)
    bare = _serve([sys.executable, "-m", "uvicorn", "bare_app:app"], workdir, "/ping")
    ours = _serve(
        [sys.executable, "-m", "signoff", "serve", "--demo", "--db", str(workdir / "s.db")],
        workdir,
        "/readyz",
        # One agent makes every proposal here; its per-agent limit would refuse most.
        {"SIGNOFF_PROPOSAL_RATE_LIMIT": "off"},
    )
    try:
        bare_idle, ours_idle = _rss(bare.pid), _rss(ours.pid)
        _flows(ours.base, options.warm, options.clients, first=options.flows)
        ours_warm = _rss(ours.pid)
        started = time.monotonic()
        _flows(ours.base, options.flows, options.clients)
        flow_seconds = time.monotonic() - started
        _requests(bare.base, 4 * options.flows, options.clients)
        bare_after, ours_after = _rss(bare.pid), _rss(ours.pid)
    finally:
        bare.stop()
        ours.stop()
    idle_ratio = ours_idle / bare_idle
    growth = ours_after / ours_idle - 1
    warm_growth = ours_after / ours_warm - 1
    print(
        f"bare FastAPI app : idle {bare_idle / 1024:6.1f} MiB, after "
        f"{4 * options.flows} requests {bare_after / 1024:6.1f} MiB"
    )
    print(
        f"signoff serve    : idle {ours_idle / 1024:6.1f} MiB, after {options.warm} flows "
        f"{ours_warm / 1024:6.1f} MiB, after {options.flows} more "
        f"{ours_after / 1024:6.1f} MiB ({flow_seconds:.0f} s, {options.clients} clients)"
    )
    print(
        f"idle ratio {idle_ratio:.2f}× (target ≤ 1.3: {_met(idle_ratio <= 1.3)}); "
        f"growth {growth * 100:+.1f} % (target ≤ 10 %: {_met(growth <= 0.10)}), "
        f"{warm_growth * 100:+.1f} % after the first {options.warm} flows; "
        f"load average {os.getloadavg()[0]:.2f}"
    )


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


class _Server:
    def __init__(self, process: subprocess.Popen[bytes], base: str) -> None:
        self.process, self.base, self.pid = process, base, process.pid

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _serve(
    command: list[str], cwd: Path, ready: str, settings: dict[str, str] | None = None
) -> _Server:
    port = bench_http._free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_")}
    env.update(settings or {})
    process = subprocess.Popen(
        [*command, "--port", str(port), "--log-level", "warning"],
        cwd=cwd,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{command[2]} exited")
        try:
            if httpx.get(base + ready, timeout=1).status_code == 200:
                for _ in range(20):  # a few requests: the first ones import lazily
                    httpx.get(base + ready, timeout=5)
                time.sleep(1)
                return _Server(process, base)
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"{command[2]} did not become ready")


def _rss(pid: int) -> int:
    """Resident set size in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit(f"no VmRSS for {pid}")


def _flows(base: str, flows: int, clients: int, *, first: int = 0) -> None:
    """``flows`` flows numbered from ``first`` (each flow's keys are unique)."""
    agent, approver = bench_http._tokens()

    def client(index: int) -> None:
        orders = bench_http.ORDERS[index::clients]
        with (
            httpx.Client(base_url=base, timeout=60) as a,
            httpx.Client(base_url=base, timeout=60) as b,
        ):
            a.headers["Authorization"] = f"Bearer {agent}"
            b.headers["Authorization"] = f"Bearer {approver}"
            for n in range(first + index, first + flows, clients):
                bench_http._flow(a, b, n, orders[(n // clients) % len(orders)])

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))


def _requests(base: str, count: int, clients: int) -> None:
    def client(index: int) -> None:
        with httpx.Client(base_url=base, timeout=60) as http:
            for _ in range(index, count, clients):
                http.get("/ping").raise_for_status()

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))


if __name__ == "__main__":
    main()

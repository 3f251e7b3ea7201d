"""Prometheus metrics for the HTTP API, in a registry of the app's own.

With several worker processes (``signoff serve --workers N``) the counters run in
prometheus_client's multiprocess mode: each worker writes its values to files in
``PROMETHEUS_MULTIPROC_DIR`` and every scrape of ``/metrics``, whichever worker
answers it, adds up all of them.
"""

from __future__ import annotations

import os
import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from signoff.exceptions import SignerRefused

PROBLEM_CODE_SCOPE_KEY = "signoff.problem_code"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "signoff_http_requests",
            "HTTP requests answered, by route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "signoff_http_request_duration_seconds",
            "Time to answer an HTTP request",
            ["method", "route"],
            registry=self.registry,
        )
        self.problems = Counter(
            "signoff_http_problems",
            "Problem responses, by stable problem code",
            ["code"],
            registry=self.registry,
        )
        self.signer_refusals = Counter(
            "signoff_signer_refusals",
            "Checkpoints the signer refused to sign (checkpoint_inconsistent, …), by code",
            ["code"],
            registry=self.registry,
        )

    def signer_refused(self, refusal: SignerRefused) -> None:
        """``GateProof.on_refusal``: count each refusal of the signer by its code."""
        self.signer_refusals.labels(code=refusal.code).inc()

    def render(self) -> tuple[bytes, str]:
        """This process's counters, or every worker's summed in multiprocess mode."""
        if os.environ.get(MULTIPROC_ENV):
            combined = CollectorRegistry()
            MultiProcessCollector(combined)  # type: ignore[no-untyped-call]
            return generate_latest(combined), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """Count and time every HTTP request by its route template (never its raw path)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def send_recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_recording)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = str(scope.get("method", ""))
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.duration.labels(method, route).observe(time.perf_counter() - started)
            code = scope.get(PROBLEM_CODE_SCOPE_KEY)
            if isinstance(code, str):
                self.metrics.problems.labels(code).inc()

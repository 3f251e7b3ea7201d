"""A chaos worker process: execute one confirmed refund and be killed on the way.

The driver writes one JSON job on stdin. For a named point, when the execution
reaches it the worker prints ``reached <point> <execution_id>`` and waits; the
driver then kills it with SIGKILL. If its stdin closes first (the driver
died), it exits at once rather than carry on. For ``anywhere`` the worker
prints ``go`` just before it calls execute, and the driver kills it after a
random delay, wherever it happens to be (inside a transaction, the provider
call, a commit).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta

from signoff._model import Execution
from signoff.chaos._processes import ANYWHERE
from signoff.chaos._world import AGENT, open_world
from signoff.exceptions import SignoffError
from signoff.gate._hooks import HookPoint

ORPHANED_EXIT = 3


def main() -> int:
    job = json.loads(sys.stdin.readline())
    anywhere = job["point"] == ANYWHERE
    target = None if anywhere else HookPoint(job["point"])

    def hooks(point: HookPoint, execution: Execution) -> None:
        if anywhere:
            print(f"at {point.value}", flush=True)  # where a random kill landed
        elif point is target:
            print(f"reached {point.value} {execution.execution_id}", flush=True)
            sys.stdin.readline()  # blocks until SIGKILL; EOF means the driver is gone
            os._exit(ORPHANED_EXIT)

    world = open_world(
        job["db"], job["shop"], lease=timedelta(seconds=job["lease"]), hooks=hooks, migrate=False
    )
    try:
        if anywhere:
            print("go", flush=True)
        result = world.gate.execute(AGENT, job["proposal_id"], job["token"])
        print(f"finished {result.execution.status.value}", flush=True)
    except SignoffError as exc:
        print(f"refused {exc.code}", flush=True)
    finally:
        world.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

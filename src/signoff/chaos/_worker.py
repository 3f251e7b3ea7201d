"""A chaos worker process: execute one confirmed refund and stop dead at a named point.

The driver writes one JSON job on stdin. When the execution reaches the job's
point the worker prints ``reached <point> <execution_id>`` and waits; the driver
then kills it with SIGKILL. If its stdin closes first (the driver died), it
exits at once rather than carry on.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta

from signoff._model import Execution
from signoff.chaos._world import AGENT, open_world
from signoff.exceptions import SignoffError
from signoff.gate._hooks import HookPoint

ORPHANED_EXIT = 3


def main() -> int:
    job = json.loads(sys.stdin.readline())
    target = HookPoint(job["point"])

    def hooks(point: HookPoint, execution: Execution) -> None:
        if point is target:
            print(f"reached {point.value} {execution.execution_id}", flush=True)
            sys.stdin.readline()  # blocks until SIGKILL; EOF means the driver is gone
            os._exit(ORPHANED_EXIT)

    world = open_world(
        job["db"], job["shop"], lease=timedelta(seconds=job["lease"]), hooks=hooks, migrate=False
    )
    try:
        result = world.gate.execute(AGENT, job["proposal_id"], job["token"])
        print(f"finished {result.execution.status.value}", flush=True)
    except SignoffError as exc:
        print(f"refused {exc.code}", flush=True)
    finally:
        world.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`signoff notify`: a bad configuration is one line naming what to fix; --once delivers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import World
from tests.notify.conftest import SECRET, Receiver


def notify(world: World, conf: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "signoff", "notify", "--db", world.store.path]
    return subprocess.run(
        [*command, "--config", str(conf), *extra], capture_output=True, text=True, check=False
    )


def test_an_unknown_event_type_is_refused_with_what_to_fix(world: World, tmp_path: Path) -> None:
    """One line, exit 2, no traceback, no secret."""
    conf = tmp_path / "n.toml"
    conf.write_text(
        '[[webhooks]]\nname = "a"\nurl = "http://127.0.0.1:9/x"\n'
        f'secret = "{SECRET}"\nevents = ["proposal.done"]\n'
    )
    done = notify(world, conf, "--once")
    assert done.returncode == 2
    assert done.stderr.startswith("error [invalid_request]: ")
    assert "unknown event types ['proposal.done']" in done.stderr
    assert "Traceback" not in done.stderr and SECRET not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_missing_secret_and_a_missing_file_are_refused(world: World, tmp_path: Path) -> None:
    """An unset secret_env variable is named as such (the file did set secret_env)."""
    conf = tmp_path / "n.toml"
    webhook = '[[webhooks]]\nname = "a"\nurl = "http://127.0.0.1:9/x"\n'
    conf.write_text(webhook + 'secret_env = "SIGNOFF_TEST_UNSET_SECRET"\n')
    done = notify(world, conf, "--once")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error [invalid_request]: webhook a: secret_env names SIGNOFF_TEST_UNSET_SECRET, which "
        "is not set in the environment; export SIGNOFF_TEST_UNSET_SECRET=whsec_… — fix the notify "
        "configuration"
    )
    conf.write_text(webhook)
    neither = notify(world, conf, "--once")
    assert neither.returncode == 2 and "set secret or secret_env" in neither.stderr
    missing = notify(world, tmp_path / "absent.toml", "--once")
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_once_delivers_what_is_new(world: World, tmp_path: Path, receiver: Receiver) -> None:
    """The first pass starts the destination; the next one sends the new proposal's event."""
    conf = tmp_path / "n.toml"
    conf.write_text(f'[[webhooks]]\nname = "a"\nurl = "{receiver.url}"\nsecret = "{SECRET}"\n')
    assert notify(world, conf, "--once").returncode == 0
    world.propose()
    done = notify(world, conf, "--once")
    assert done.returncode == 0 and "delivered 1 notifications" in done.stderr
    assert len(receiver.accepted_ids()) == 1

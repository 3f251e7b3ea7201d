"""Every command the README's table and the docs' ```sh blocks show runs as written.

Each runs in a fresh working directory with its own data directory. Long-running
commands (`serve`, `mcp`) must come up and are then stopped. A block is skipped
only when the line before it is `<!-- not-runnable: why -->`; the README's first
block (create the venv, run the tests) is what .ci/run itself executes.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.serving import free_port, stop, wait_ready

ROOT = Path(__file__).resolve().parent.parent
NOT_RUNNABLE = "<!-- not-runnable:"
LONG_RUNNING = {"serve": "/readyz", "mcp": None}
pytestmark = pytest.mark.slow


def readme_table_commands() -> list[str]:
    """The first cell of each row of the README's Commands table."""
    section = (ROOT / "README.md").read_text().split("## Commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(signoff [^`]+)` \|", section, flags=re.M)


def sh_blocks() -> list[tuple[str, str]]:
    """(where, block) for every ```sh block in README.md and docs/, minus the skipped."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for match in re.finditer(r"(?P<before>[^\n]*)\n```sh\n(?P<body>.*?)```", text, re.S):
            if match["before"].startswith(NOT_RUNNABLE):
                continue
            if path.name == "README.md" and text.index("```sh") == match.start("body") - 6:
                continue  # the README's own first block: .ci/run runs it verbatim
            line = text.count("\n", 0, match.start()) + 2
            found.append((f"{path.name}:{line}", match["body"]))
    return found


def commands_of(block: str) -> list[str]:
    """Lines of a block, continuation lines joined, comments dropped."""
    joined = block.replace("\\\n", " ")
    lines = [line.split("  #", 1)[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def fresh_directory(path: Path) -> Path:
    """A new working directory that has what docs refer to by relative path: .venv, examples."""
    (path / ".venv").symlink_to(Path(sys.prefix))
    for shared in ("examples", "scripts"):
        if (ROOT / shared).is_dir():
            (path / shared).symlink_to(ROOT / shared)
    return path


def run(command: str, cwd: Path, exports: str = "") -> None:
    """Run one documented command line as a user would (`signoff` from this venv)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_")}
    env["SIGNOFF_DATA_DIR"] = str(cwd / "data")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    words = shlex.split(command)
    assignments = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # `NAME=value signoff …`
        name, _, value = words.pop(0).partition("=")
        assignments[name] = value
    if (
        words[:1] == ["signoff"]
        and words[1:2]
        and words[1] in LONG_RUNNING
        and "--help" not in words
    ):
        _run_long(words, cwd, {**_with_exports(exports, cwd, env), **assignments})
        return
    done = subprocess.run(
        ["bash", "-ec", f"{exports}\n{command}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def _with_exports(exports: str, cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment after the block's earlier `export` lines."""
    if not exports:
        return env
    dump = subprocess.run(
        ["bash", "-ec", f"{exports}\nenv -0"], cwd=cwd, env=env, capture_output=True, check=True
    ).stdout.decode()
    return dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)


def _run_long(words: list[str], cwd: Path, env: dict[str, str]) -> None:
    if words[1] == "serve" and "--port" not in words:
        words = [*words, "--port", str(free_port())]
    process = subprocess.Popen(
        words,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if words[1] == "serve":
            port = words[words.index("--port") + 1]
            wait_ready(f"http://127.0.0.1:{port}", process, within=120)
        else:
            time.sleep(3)
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
    finally:
        stop(process, signal.SIGINT)


def test_the_readme_lists_every_command() -> None:
    """The table shows a runnable line for each top-level command."""
    shown = {command.split()[1] for command in readme_table_commands()}
    assert shown >= {"demo", "serve", "dev-token", "tools", "mcp", "reconcile", "audit", "db"}


@pytest.mark.parametrize("command", readme_table_commands())
def test_readme_command_runs_as_written(command: str, tmp_path: Path) -> None:
    """Each README table command, in a fresh directory (a store is made first where needed).

    A row written as a form (an upper-case placeholder such as URL or FILE, or [options])
    cannot run as is: its command and options must at least parse, checked with --help.
    """
    if re.search(r"\b[A-Z]{3,}\b|\[|\\\|", command):
        command = re.split(r" \[|\\\|", command, maxsplit=1)[0] + " --help"
    cwd = fresh_directory(tmp_path)
    if command.startswith("signoff audit verify"):
        run("signoff db upgrade", cwd)  # the default database it verifies
    run(command, cwd)
    if ">" not in command:  # nothing but the data directory: no litter in the CWD
        made = {p.name for p in tmp_path.iterdir()} - {".venv", "examples", "scripts"}
        assert made <= {"data"}


@pytest.mark.parametrize(("where", "block"), sh_blocks(), ids=[w for w, _ in sh_blocks()])
def test_docs_shell_block_runs_as_written(where: str, block: str, tmp_path: Path) -> None:
    """Each line of each ```sh block in the docs, in order, in one fresh directory."""
    cwd = fresh_directory(tmp_path)
    if where.startswith("TOOLS.md"):  # "serve it from the directory that holds first_tool.py"
        page = (ROOT / "docs" / "TOOLS.md").read_text()
        (cwd / "first_tool.py").write_text(page.split("```python\n", 1)[1].split("```", 1)[0])
    exports = ""
    for command in commands_of(block):
        if command.startswith("export "):
            exports += command + "\n"
            continue
        run(command, cwd, exports)


def test_operations_settings_table_is_the_settings() -> None:
    """docs/OPERATIONS.md lists exactly the settings `serve --help` shows, in the same words."""
    from signoff.cli._settings_help import markdown_table

    text = (ROOT / "docs" / "OPERATIONS.md").read_text()
    shown = text.split("<!-- settings-table:start -->\n", 1)[1].split("\n<!-- settings-table:end")[
        0
    ]
    assert shown == markdown_table(), "paste signoff.cli._settings_help.markdown_table()"

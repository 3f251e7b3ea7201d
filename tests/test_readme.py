"""The README's two commands are the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import click

from signoff.cli._main import cli

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_demo_and_test_commands() -> None:
    """First the demo, then the tests, each bootstrapping its own virtual environment."""
    demo, tests = _readme_commands()
    assert demo.startswith("python3 -m venv .venv") and demo.endswith("signoff demo")
    assert tests.startswith("python3 -m venv .venv") and tests.endswith("pytest")


def test_ci_runs_the_readme_test_command_exactly() -> None:
    """.ci/run contains the README's test command verbatim."""
    _, tests = _readme_commands()
    assert tests in (ROOT / ".ci" / "run").read_text().splitlines()


def test_readme_python_example_runs_twice(tmp_path: Path) -> None:
    """The README's Python example refunds once per run, and a second run works too."""
    import os
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "example.py"
    script.write_text(code)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env={**os.environ, "TMPDIR": str(scratch)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert "SUCCEEDED" in result.stdout or "succeeded" in result.stdout
    from signoff.demo import DemoShop, RefundProvider

    shops = sorted(scratch.glob("*/shop.sqlite"))
    assert len(shops) == 2
    for path in shops:
        shop = DemoShop(str(path))
        try:
            assert [e.order_id for e in RefundProvider(shop).ledger()] == ["ord_1001"]
        finally:
            shop.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example.py", "tmp"]  # no litter


def _command_rows() -> list[str]:
    """The first cell's command of each row of the README's command table."""
    text = (ROOT / "README.md").read_text()
    return [
        line.split("`", 2)[1].replace("\\|", "|")
        for line in text.splitlines()
        if line.startswith("| `signoff ")
    ]


def test_every_command_in_the_table_names_its_required_options() -> None:
    """A row such as `signoff keys generate` shows each required option (`--out FILE`), so
    the line a reader copies works; every named subcommand exists."""
    rows = _command_rows()
    assert len(rows) >= 15
    for row in rows:
        for command in _commands_of(row):
            for param in command.params:
                if isinstance(param, click.Option) and param.required:
                    assert any(flag in re.findall(r"--[a-z-]+", row) for flag in param.opts), (
                        f"README row `{row}` leaves out the required {param.opts[0]}"
                    )


def _commands_of(row: str) -> list[click.Command]:
    """The commands a row names: `signoff roles grant|revoke|list …` names three."""
    words = row.split()[1:]
    groups: list[click.Command] = [cli]
    while words and not words[0].startswith("-") and isinstance(groups[0], click.Group):
        group = groups[0]
        names = words.pop(0).split("|")
        found = [group.get_command(click.Context(group), name) for name in names]
        assert all(found), f"{row}: no command among {names}"
        groups = [c for c in found if c is not None]
    return groups

"""The README's two commands are the ones CI runs."""

from __future__ import annotations

from pathlib import Path

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

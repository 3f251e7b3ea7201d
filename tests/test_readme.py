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


def test_readme_python_example_runs(tmp_path: Path) -> None:
    """The README's Python example performs one refund, as it claims."""
    import os
    import runpy

    text = (ROOT / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "example.py"
    script.write_text(code)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        runpy.run_path(str(script))
    finally:
        os.chdir(cwd)
    from signoff.demo import DemoShop, RefundProvider

    shop = DemoShop(str(tmp_path / "shop.sqlite"))
    try:
        assert [e.order_id for e in RefundProvider(shop).ledger()] == ["ord_1001"]
    finally:
        shop.close()

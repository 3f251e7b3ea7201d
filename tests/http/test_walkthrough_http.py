"""examples/walkthrough.http runs as written against the API, answering what it says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.conftest import AGENT, APPROVER
from tests.http.conftest import Api, token_for

WALKTHROUGH = Path(__file__).parents[2] / "examples" / "walkthrough.http"
EXPECTED = [200, 200, 201, 403, 200, 200, 200, 200, 200, 200, 409, 200]
_VARIABLE = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")


def substitute(text: str, variables: dict[str, str], named: dict[str, Any]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in variables:
            return variables[name]
        request, _, path = name.partition(".response.body.")
        current = named[request]
        for part in path.split("."):
            current = current[part]
        return str(current)

    return _VARIABLE.sub(value, text)


def requests_of(text: str) -> tuple[dict[str, str], list[tuple[str | None, str]]]:
    variables = dict(re.findall(r"^@(\w+) = (.*)$", text, flags=re.MULTILINE))
    blocks = []
    for block in re.split(r"^###.*$", text, flags=re.MULTILINE)[1:]:
        name = re.search(r"^# @name (\w+)$", block, flags=re.MULTILINE)
        lines = [line for line in block.strip().splitlines() if not line.startswith("#")]
        blocks.append((name.group(1) if name else None, "\n".join(lines)))
    return variables, blocks


def test_walkthrough_runs_as_documented(api: Api) -> None:
    """Propose, approve, approve again (duplicate), execute, receipt, token refused."""
    variables, blocks = requests_of(WALKTHROUGH.read_text(encoding="utf-8"))
    variables.update(base="", agent=token_for(AGENT), approver=token_for(APPROVER))
    named: dict[str, Any] = {}
    answers = []
    for name, raw in blocks:
        head, _, body = substitute(raw, variables, named).partition("\n\n")
        request_line, *header_lines = head.splitlines()
        method, url = request_line.split(" ", 1)
        headers = dict(line.split(": ", 1) for line in header_lines)
        response = api.client.request(method, url, headers=headers, content=body or None)
        answers.append(response)
        if name is not None:
            named[name] = response.json()
    assert [r.status_code for r in answers] == EXPECTED
    assert answers[3].json()["code"] == "separation_of_duties"
    first, again = answers[5].json(), answers[6].json()
    assert (first["duplicate"], again["duplicate"]) == (False, True)
    assert again["proposal"]["action_id"] == first["proposal"]["action_id"]
    assert "confirmation_token" not in first and "confirmation_token" not in again
    assert answers[7].headers["cache-control"] == "no-store"
    assert answers[10].json()["code"] == "already_consumed"
    assert api.world.ledger_amounts() == [("ord_1001", 19900)]

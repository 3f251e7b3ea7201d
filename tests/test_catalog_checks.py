"""A badly declared tool is refused at registration with one line that says what to write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest

from signoff import (
    ApprovalPolicy,
    Catalog,
    Gate,
    Preview,
    PreviewField,
    Principal,
    ProviderOutcome,
    ResourceState,
    Risk,
    SideEffect,
    SQLiteStore,
    StrictArgs,
    Succeeded,
    WriteTool,
)
from signoff.exceptions import CatalogError, SignoffError
from signoff.http import Settings
from signoff.http._catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent


class NoteArgs(StrictArgs):
    text: str
    pinned: bool | None


class Good(WriteTool[NoteArgs]):
    name = "pin_note"
    description = "Pin a note."
    side_effect = SideEffect.REVERSIBLE
    approver_role = "editor"

    def preview(self, args: NoteArgs, state: ResourceState) -> Preview:
        return Preview("Pin", self.description, (PreviewField("text", "Text", args.text),), "", "")

    def execute(self, args: NoteArgs, request_key: str, expected: ResourceState) -> ProviderOutcome:
        return Succeeded(request_key)

    def lookup(self, request_key: str) -> Succeeded:
        return Succeeded(request_key)


class WrongExecuteArity(Good):
    def execute(self, args: NoteArgs, request_key: str) -> ProviderOutcome:  # type: ignore[override]
        return Succeeded(request_key)


class WrongLookupArity(Good):
    def lookup(self) -> Succeeded:  # type: ignore[override]
        return Succeeded("x")


class WrongPreviewReturn(Good):
    def preview(self, args: NoteArgs, state: ResourceState) -> dict[str, str]:  # type: ignore[override]
        return {}


class ExecuteReturnsNone(Good):
    def execute(self, args: NoteArgs, request_key: str, expected: ResourceState) -> None:  # type: ignore[override]
        pass


class WrongPolicyArity(Good):
    def policy(self, args: NoteArgs, state: ResourceState) -> ApprovalPolicy:  # type: ignore[override]
        return ApprovalPolicy(role="editor")


class WrongRiskReturn(Good):
    def risk(self, args: NoteArgs, state: ResourceState) -> str:  # type: ignore[override]
        return "high"


class NoApprover(Good):
    approver_role = None  # type: ignore[assignment]


class RoleWithSpaces(Good):
    approver_role = "Email Approver!"


class RetypesAnUnknownField(Good):
    retype = ("txt",)


class LooseArgs(pydantic.BaseModel):
    text: str


class NotStrictBase(WriteTool[LooseArgs]):  # type: ignore[type-var]
    name = "loose"
    description = "Loose."
    side_effect = SideEffect.NONE
    approver_role = "editor"
    preview = Good.preview  # type: ignore[assignment]
    execute = Good.execute  # type: ignore[assignment]
    lookup = Good.lookup


class LaxArgs(StrictArgs):
    model_config = pydantic.ConfigDict(extra="ignore", strict=True, frozen=True)
    text: str


class LaxTool(WriteTool[LaxArgs]):
    name = "lax"
    description = "Lax."
    side_effect = SideEffect.NONE
    approver_role = "editor"
    preview = Good.preview  # type: ignore[assignment]
    execute = Good.execute  # type: ignore[assignment]
    lookup = Good.lookup


class Inner(pydantic.BaseModel):
    value: int


class NestedLooseArgs(StrictArgs):
    inner: Inner


class NestedLoose(WriteTool[NestedLooseArgs]):
    name = "nested"
    description = "Nested."
    side_effect = SideEffect.NONE
    approver_role = "editor"
    preview = Good.preview  # type: ignore[assignment]
    execute = Good.execute  # type: ignore[assignment]
    lookup = Good.lookup


class DefaultArgs(StrictArgs):
    text: str
    pinned: bool = False


class WithDefault(WriteTool[DefaultArgs]):
    name = "with_default"
    description = "Defaults."
    side_effect = SideEffect.NONE
    approver_role = "editor"
    preview = Good.preview  # type: ignore[assignment]
    execute = Good.execute  # type: ignore[assignment]
    lookup = Good.lookup


class ReservedArgs(StrictArgs):
    text: str
    signoff_mandate_id: str | None


class ReservedName(WriteTool[ReservedArgs]):
    name = "reserved"
    description = "Takes a name the request tools keep for themselves."
    side_effect = SideEffect.NONE
    approver_role = "editor"
    preview = Good.preview  # type: ignore[assignment]
    execute = Good.execute  # type: ignore[assignment]
    lookup = Good.lookup


class NoSideEffect(Good):
    side_effect = "external"  # type: ignore[assignment]


class BadReason(Good):
    reject_reasons = ("Wrong Text!",)


class ArgsModelContradicts(Good):
    args_model = DefaultArgs  # type: ignore[assignment]


BAD_TOOLS: list[tuple[type[WriteTool[Any]], str]] = [
    (
        WrongExecuteArity,
        r"execute must take execute\(self, args, request_key, expected\), "
        r"not execute\(self, args, request_key\)",
    ),
    (WrongLookupArity, r"lookup must take lookup\(self, request_key\), not lookup\(self\)"),
    (WrongPolicyArity, r"policy must take policy\(self, args, state, risk\)"),
    (WrongPreviewReturn, r"preview is annotated to return dict; it must return Preview"),
    (ExecuteReturnsNone, r"execute is annotated to return NoneType; it must return Succeeded"),
    (WrongRiskReturn, r"risk is annotated to return str; it must return Risk"),
    (NoApprover, r"names no approver: set approver_role = '…'"),
    (RoleWithSpaces, r"role 'Email Approver!' is not a role name: letters, digits and _ \. : / -"),
    (RetypesAnUnknownField, r"retype names \['txt'\], which are not arguments"),
    (NotStrictBase, r"LooseArgs must subclass signoff.StrictArgs"),
    (LaxTool, r"LaxArgs is not strict"),
    (NestedLoose, r"Inner is not strict"),
    (WithDefault, r"DefaultArgs.pinned has a default"),
    (ReservedName, r"starting with 'signoff_' are reserved .*signoff_mandate_id"),
    (NoSideEffect, r"must declare side_effect"),
    (BadReason, r"reject reason 'Wrong Text!' must be lower_snake_case"),
    (ArgsModelContradicts, r"args_model is DefaultArgs but the class says WriteTool\[NoteArgs\]"),
]


@pytest.mark.parametrize(("tool", "message"), BAD_TOOLS, ids=[t.__name__ for t, _ in BAD_TOOLS])
def test_a_bad_tool_is_one_line_at_registration(tool: type[WriteTool[Any]], message: str) -> None:
    """Each mistake is a CatalogError of one line naming the tool and the fix."""
    with pytest.raises(CatalogError, match=message) as caught:
        Catalog([tool()])
    assert "\n" not in str(caught.value)
    assert repr(tool.name) in str(caught.value)


def test_the_good_tool_registers_with_what_it_left_out() -> None:
    """args_model from WriteTool[NoteArgs]; policy from approver_role; no state read."""
    tool = Good()
    catalog = Catalog([tool])
    assert tool.args_model is NoteArgs
    assert not tool.reads_state()
    assert catalog.schema("pin_note")["required"] == ["text", "pinned"]
    args = tool.parse({"text": "x", "pinned": None})
    state = tool.read_state(args, Principal("u", "t"))
    assert (state.resource_id, state.version) == ("pin_note:new", "0")
    policy = tool.policy(args, state, Risk.from_dict({"level": "low"}))
    assert policy == ApprovalPolicy(role="editor")
    assert list(tool.reasons()) == ["wrong_target", "policy", "suspicious", "other"]


def test_an_optional_argument_is_published_and_parsed_the_same_way() -> None:
    """Nullable and required in the schema; the parser wants the key too, null allowed."""
    tool = Good()
    schema = Catalog([tool]).schema("pin_note")
    assert {"type": "null"} in schema["properties"]["pinned"]["anyOf"]
    assert "pinned" in schema["required"]
    assert tool.parse({"text": "x", "pinned": None}).pinned is None
    with pytest.raises(Exception, match="arguments do not match"):
        tool.parse({"text": "x"})


def test_a_wrong_execute_never_reaches_a_gate(tmp_path: Path) -> None:
    """The catalog refuses it, so no proposal, no confirmation, nothing consumed."""
    store = SQLiteStore(tmp_path / "signoff.db")
    store.migrate()
    with pytest.raises(CatalogError):
        Gate(Catalog([WrongExecuteArity()]), store, token_key=b"k" * 32)


def make_catalog() -> Catalog:
    return Catalog([Good()])


def make_bad_catalog() -> Catalog:
    return Catalog([WrongExecuteArity()])


NOT_A_CATALOG = 42


def needs_an_argument(shop: str) -> Catalog:
    return Catalog()


def returns_a_list() -> list[Good]:
    return [Good()]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.test_catalog_checks:Good", r"is a class, not a signoff.Catalog"),
        ("tests.test_catalog_checks:NOT_A_CATALOG", r"is a int, not a signoff.Catalog"),
        ("tests.test_catalog_checks:needs_an_argument", r"cannot be called without arguments"),
        ("tests.test_catalog_checks:returns_a_list", r"returned list, not a signoff.Catalog"),
        ("tests.test_catalog_checks:make_bad_catalog", r"execute must take execute\(self, args"),
        ("tests.test_catalog_checks:nothing_here", r"has no 'nothing_here'"),
        ("no_such_module_here:catalog", r"add its directory to PYTHONPATH"),
        ("tests.test_catalog_checks", r"MODULE:ATTR"),
    ],
)
def test_a_bad_catalog_factory_is_one_line(spec: str, message: str) -> None:
    """SIGNOFF_CATALOG naming a class, a number, a wrong factory or a bad tool: one line."""
    with pytest.raises(SignoffError, match=message) as caught:
        load_catalog(Settings(catalog=spec))
    assert "\n" not in str(caught.value)
    assert "SIGNOFF_CATALOG" in str(caught.value)


def test_a_factory_and_a_catalog_both_load() -> None:
    """A function returning a Catalog, or a Catalog itself."""
    catalog = load_catalog(Settings(catalog="tests.test_catalog_checks:make_catalog"))
    assert [t.name for t in catalog] == ["pin_note"]


def test_a_class_as_catalog_at_start_is_one_line_on_the_cli(tmp_path: Path) -> None:
    """`signoff tools` with SIGNOFF_CATALOG naming a class: one error line, no traceback."""
    env = {
        "SIGNOFF_CATALOG": "tests.test_catalog_checks:Good",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-m", "signoff", "tools", "--format", "openai"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Good is a class" in lines[0], done.stderr


@pytest.mark.parametrize("role", ["email_approver", "Mail.Approve", "realm:ops", "team/finance-1"])
def test_role_names_as_identity_tokens_carry_them_are_accepted(role: str) -> None:
    """The role syntax admits what IdPs issue (Entra app roles, Keycloak realm roles)."""
    assert ApprovalPolicy(role=role).role == role


@pytest.mark.parametrize("role", ["", "Email Approver", "approver!", "-lead", "a" * 129])
def test_a_role_that_no_token_could_carry_is_refused(role: str) -> None:
    """Spaces, punctuation, a leading dash or 129 characters: refused when declared."""
    with pytest.raises(ValueError, match="is not a role name"):
        ApprovalPolicy(role=role)

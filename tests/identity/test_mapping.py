"""Claim mapping per issuer: tenant, roles, agent and client from where each provider puts them."""

from __future__ import annotations

from typing import Any

import pytest

from signoff import Principal
from signoff.exceptions import NotAuthenticated
from signoff.identity import ClaimMapping, principal_from_claims


def mapped(claims: dict[str, Any], **mapping: Any) -> Principal:
    return principal_from_claims({"sub": "alice", **claims}, ClaimMapping(**mapping))


def test_a_fixed_tenant_ignores_any_tenant_claim() -> None:
    """One issuer per tenant: the tenant is configuration, not a claim."""
    assert mapped({"tenant": "other"}, tenant="acme").tenant == "acme"


def test_a_missing_tenant_claim_is_a_clear_401() -> None:
    """The refusal names the claim the mapping expects."""
    with pytest.raises(NotAuthenticated) as caught:
        mapped({}, tenant_claim="tid")
    assert caught.value.details == {"reason": "missing_claim", "claim": "tid"}
    assert "'tid'" in caught.value.message


def test_roles_from_a_nested_path() -> None:
    """Keycloak's realm_access.roles is a path into an object."""
    claims = {"tenant": "acme", "realm_access": {"roles": ["refund_approver", "offline_access"]}}
    roles = mapped(claims, roles_claim="realm_access.roles").roles
    assert roles == {"refund_approver", "offline_access"}


def test_roles_from_a_space_separated_scope() -> None:
    """scope is one string; roles_format=space splits it."""
    principal = mapped(
        {"tenant": "acme", "scope": "openid refund_approver"},
        roles_claim="scope",
        roles_format="space",
    )
    assert principal.roles == {"openid", "refund_approver"}


def test_a_list_is_required_unless_the_format_says_space() -> None:
    """A string where a list is expected is refused, not guessed."""
    with pytest.raises(NotAuthenticated):
        mapped({"tenant": "acme", "roles": "refund_approver"})


def test_role_map_keeps_only_mapped_groups() -> None:
    """Provider group names (with spaces) map to signoff roles; others are dropped."""
    principal = mapped(
        {"tenant": "acme", "groups": ["Refund Approvers", "Everyone", "émigrés"]},
        roles_claim="groups",
        role_map={"Refund Approvers": "refund_approver"},
    )
    assert principal.roles == {"refund_approver"}


def test_a_namespaced_claim_with_dots_is_read_as_written() -> None:
    """Auth0 custom claims are URLs; the whole name is tried before a dotted path."""
    claims = {"https://signoff.example.com/tenant": "acme"}
    assert mapped(claims, tenant_claim="https://signoff.example.com/tenant").tenant == "acme"


def test_a_registered_agent_client_acts_for_the_subject() -> None:
    """A token issued to an agent client (azp) is that agent acting for sub."""
    principal = mapped({"tenant": "acme", "azp": "support-bot"}, agent_clients=("support-bot",))
    assert principal.actor == "support-bot" and principal.client == "support-bot"
    person = mapped({"tenant": "acme", "azp": "jdk8-crm"}, agent_clients=("support-bot",))
    assert person.actor is None and person.client == "jdk8-crm"


def test_act_wins_over_the_client_and_can_be_ignored() -> None:
    """act names the agent; an issuer may switch act off (then the token is a person's)."""
    claims = {"tenant": "acme", "act": {"sub": "agent:x"}, "azp": "support-bot"}
    assert mapped(claims, agent_clients=("support-bot",)).actor == "agent:x"
    assert mapped(claims, act_claim=False).actor is None


def test_client_from_another_claim_and_page_is_reserved() -> None:
    """Entra v1 names the client in appid; nobody may claim to be the page."""
    assert mapped({"tenant": "a", "appid": "crm"}, client_claims=("appid",)).client == "crm"
    with pytest.raises(NotAuthenticated):
        mapped({"tenant": "a", "azp": "page"})


def test_subject_from_another_claim() -> None:
    """Entra's stable object id (oid) may name the person instead of sub."""
    assert mapped({"tenant": "a", "oid": "0f1e"}, subject_claim="oid").subject == "0f1e"

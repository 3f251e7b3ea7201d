"""Policies as data: the policy file, Cedar conditions, effective policies and versions,
and the constraints of standing approvals (mandates). See docs/POLICIES.md.

It imports primitives and the catalog only: the gate asks it, the CLI and
``signoff serve`` load files with it, and nothing here reads the store.
"""

from signoff.policy._cedar import Condition, cedar_request, cedar_schema
from signoff.policy._check import DEFAULT_SECTIONS, SectionCheck, check_policy
from signoff.policy._diff import ProposalChange, document_changes, pending_changes
from signoff.policy._duration import parse_duration
from signoff.policy._effective import (
    EffectivePolicy,
    effective_policy,
    mandate_coverage,
    mandate_policy,
    policy_version,
    thresholds_for,
)
from signoff.policy._file import Layer, PolicyFile, Rule, load_policy_file, parse_policy
from signoff.policy._mandates import CONSTRAINTS, Constraints, mandate_digest
from signoff.policy._problems import Problem
from signoff.policy._source import PolicySource

__all__ = [
    "CONSTRAINTS",
    "DEFAULT_SECTIONS",
    "Condition",
    "Constraints",
    "EffectivePolicy",
    "Layer",
    "PolicyFile",
    "PolicySource",
    "Problem",
    "ProposalChange",
    "Rule",
    "SectionCheck",
    "cedar_request",
    "cedar_schema",
    "check_policy",
    "document_changes",
    "effective_policy",
    "load_policy_file",
    "mandate_coverage",
    "mandate_digest",
    "mandate_policy",
    "parse_duration",
    "parse_policy",
    "pending_changes",
    "policy_version",
    "thresholds_for",
]

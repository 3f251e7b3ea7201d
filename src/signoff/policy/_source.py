"""Where the gate reads the policy in force: a file, reloaded on demand (SIGHUP in serve).

A reload that finds problems keeps the policy in force and raises; the gate
never runs on half a file. Swapping is one reference assignment, so a
proposal is decided entirely under the old policy or entirely under the new.
"""

from __future__ import annotations

import threading
from pathlib import Path

from signoff.catalog._catalog import Catalog
from signoff.policy._check import check_policy
from signoff.policy._file import PolicyFile, load_policy_file
from signoff.policy._problems import refuse


class PolicySource:
    """The policy in force for one gate; ``path`` None means the tools' Python policies."""

    def __init__(self, catalog: Catalog, path: str | Path | None = None) -> None:
        self.catalog = catalog
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self._current: PolicyFile | None = None
        if self.path is not None:
            self._current = self.read()

    @classmethod
    def of(cls, catalog: Catalog, policy: PolicyFile | None) -> PolicySource:
        """A source holding ``policy`` (already parsed) with no file to reload from."""
        source = cls(catalog)
        if policy is not None:
            source.replace(policy)
        return source

    @property
    def current(self) -> PolicyFile | None:
        return self._current

    def read(self) -> PolicyFile:
        """Parse and check the file, without putting it in force."""
        assert self.path is not None
        policy = load_policy_file(self.path)
        problems = check_policy(policy, self.catalog)
        if problems:
            raise refuse(problems, str(self.path))
        return policy

    def reload(self) -> PolicyFile:
        """Read the file again and put it in force; on a problem the old one stays."""
        with self._lock:
            policy = self.read()
            self._current = policy
            return policy

    def replace(self, policy: PolicyFile) -> None:
        problems = check_policy(policy, self.catalog)
        if problems:
            raise refuse(problems, policy.source)
        with self._lock:
            self._current = policy

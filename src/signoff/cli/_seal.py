"""Commands that write audit events authenticate them when the key file is configured.

An event without the gate's MAC is never covered by a checkpoint, and nor is
anything after it (docs/PROOF.md): `signoff roles`, `signoff reconcile` and
`signoff mcp` seal what they append with the MAC key of
``SIGNOFF_SIGNING_KEYS_FILE`` (or ``SIGNOFF_SIGNING_KEYS``) when it is set.
"""

from __future__ import annotations

import os

from signoff.store._base import Store

KEYS_VARIABLES = ("SIGNOFF_SIGNING_KEYS", "SIGNOFF_SIGNING_KEYS_FILE")


def seal_from_environment(store: Store) -> Store:
    if not any(os.environ.get(name) for name in KEYS_VARIABLES):
        return store
    from signoff.gate._proof import event_seal
    from signoff.proof import EventAuthenticator, keyset_from_environment

    keyset = keyset_from_environment(os.environ)
    assert keyset is not None
    store.event_seal = event_seal(EventAuthenticator(keyset.mac_keys))
    return store

"""The tamper-evident, hash-chained audit log."""

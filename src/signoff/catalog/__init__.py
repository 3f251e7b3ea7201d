"""Declaring write tools: arguments, policy, preview, provider (docs/TOOLS.md)."""

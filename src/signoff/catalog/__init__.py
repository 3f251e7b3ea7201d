"""Declaring write tools: arguments, policy, preview, provider."""

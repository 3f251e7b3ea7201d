"""The protocol core: propose, decide, execute — and nothing from the edges."""

"""AG-UI adapter (placeholder until the adapter module lands)."""

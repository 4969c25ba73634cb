"""Text utilities every layer may use."""

"""The Across layers tab."""

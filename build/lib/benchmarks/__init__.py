"""Benchmarks that print figures, never assertions: python -m benchmarks.<train|decode|ui|load> --help."""

"""The Model tab."""

"""The Beam search tab."""

"""The Attention being learned tab."""

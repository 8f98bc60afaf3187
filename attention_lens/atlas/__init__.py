"""The Head atlas tab."""

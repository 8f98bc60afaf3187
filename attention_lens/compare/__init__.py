"""The Compare tab."""

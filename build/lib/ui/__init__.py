"""The Gradio app of attention-lens (the library it shows is `transformer`, which never imports this)."""
from .app import build_demo

__all__ = ["build_demo"]

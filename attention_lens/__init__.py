"""The Gradio app of attention-lens (the library it shows is `transformer`, which never imports this).

Importing this package imports nothing large: `attention_lens.shell.memory` must be usable before gradio and torch are
loaded (app.py tunes the allocator first), so `build_demo` is loaded on first use."""

__all__ = ["build_demo"]


def __getattr__(name: str):
    if name == "build_demo":
        from attention_lens.app import build_demo
        return build_demo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

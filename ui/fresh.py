"""The tabs' name for the page's rules of results (kept so that each tab's `from . import fresh` reads as before):
everything here is ui/page_state.py's, where the page's state and the events owning it are said."""
from .page_state import QUIET, cleared, hidden, on_new, started, unstarted, wire

__all__ = ["QUIET", "cleared", "hidden", "on_new", "started", "unstarted", "wire"]

"""One decode per view opened as a link: a Start's answer for (model, sentence, k, words), computed once and shared
by every page that opens the same view while it is kept.

A live class's followers each open the teacher's view as a link (assets/live/live.js, assets/shell/link.js); without
this, a new sentence cost one Start per student (200 students: 200 decodes of 0.15-0.27 s before the last one saw it).
The first request of a view decodes it (handlers.start, once into the library); requests of the same view arriving
meanwhile wait for that decode, and later ones take its answer while it is among the KEEP most recently used and younger
than TTL_S. Sharing is safe because an answer is never changed after it is made: the session in it is the user's
gr.State, which every handler forks before it moves it (attention_lens/shell/inputs.py need_session), and the payload is
only encoded. A link's view holds no forced piece (assets/shell/link.js url() says so when the view has one: the link
opens its greedy decoding), so the model and the sentence name its decoding."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future

from attention_lens.translate import handlers

KEEP = 8  # answers kept: the views of a few classes at once (a 60-word sentence's answer holds a few MB)
TTL_S = 600.0


class SharedStarts:
    """The Start answers of views opened as links, each decoded once (thread-safe: Gradio runs the link's handler on
    its worker threads). `decodes` counts the decodes made."""

    def __init__(self, keep: int = KEEP, ttl_s: float = TTL_S):
        self.keep, self.ttl_s = keep, ttl_s
        self.decodes = 0
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple, tuple[float, Future]] = OrderedDict()  # key -> (made at, its answer)

    def start(self, model_key: str, tr, text: str, k: int, words: bool):
        """handlers.start(tr, text, k, words)'s answer for this view: decoded here, or the one being decoded or kept
        for the same view (its notes said to this request's user too). A refusal (gr.Error) is not kept."""
        key = (model_key, tr, text, k, bool(words))  # the translator itself: an id may be reused once it is gone
        now = time.monotonic()
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and (not kept[1].done() or now - kept[0] < self.ttl_s):
                self._kept.move_to_end(key)
                mine = None
            else:
                mine = Future()
                self._kept[key] = (now, mine)
                self.decodes += 1
                while len(self._kept) > self.keep:
                    self._kept.popitem(last=False)
        if mine is None:
            answer = kept[1].result()  # raises as the decode did
            handlers.tell_notes(answer[0].notes)
            return answer
        try:
            answer = handlers.start(tr, text, k, words)
        except BaseException as e:
            with self._lock:
                if self._kept.get(key, (None, None))[1] is mine:
                    del self._kept[key]
            mine.set_exception(e)
            raise
        mine.set_result(answer)
        return answer


STARTS = SharedStarts()  # this process's (attention_lens/shell/link.py opened)

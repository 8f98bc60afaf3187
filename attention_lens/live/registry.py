"""Live classes (issue 59), with no Gradio in them: a registry of classes, each one teacher's view that students
follow. A class is a code (the student link's `?class=<code>`, secrets.token_urlsafe: 96 random bits) and a teacher
token (another 256 bits) that alone may change it. The class's view is the page state the app already writes into a
link (assets/link.js `url()`: a query string); the teacher's page sends it on every change and each student's page
opens it as a link (#link_box's .link.open, assets/link.js), so a class shows exactly what a link would.

Followers wait on an asyncio.Event that the next change sets (then a new one is made): a change wakes each waiting
follower once; nothing polls. Bounds: MAX_CLASSES classes x MAX_STUDENTS students; a class ends CLASS_TTL_S after the
teacher's last change (or when the teacher closes it); at most MAX_FOLLOWING students follow at once over all
classes. Memory: one follower costs its Gradio session (its SessionState, the config of the page's 219 blocks: 329 kB
by tracemalloc), its event and its stream, about 450 kB of the app's RSS (python -m benchmarks.live_class --students
60, 120, 200: +26.5, +52.9, +87.9 MB; docs/benchmarks.md 'A live class'), so MAX_FOLLOWING followers hold about 450
MB: the bounds keep a process's worst case below its machine's memory. Gradio keeps a session until its least
recently used place is needed, so the app's places for followers' sessions (attention_lens/live/page.py SESSION_PLACES)
may hold the sessions of followers who left: about 1,100 x 330 kB = 360 MB at most, with no one following.

Kept over a restart: with a store (attention_lens/live/store.py, attached by attention_lens/live/page.py) every change
of a class is written to its SQLite row, an ended class's row deleted, and a new process takes back the classes still
alive. The store keeps the SHA-256 of the teacher's token, never the token: the token is in the teacher's browser
alone, and her page sends it again after a reload or a restart.

The teacher's presence: her page's stream counts while it is open; when none has been open for AWAY_S seconds the
students' snapshots say `away` (and stop saying it when she is back). Every stream yields a heartbeat every BEAT_S
seconds (its snapshot with `beat` counted up): Gradio notices a closed page only when its stream yields, and a page
that has heard nothing for a while knows its stream dropped and reconnects (assets/live.js).

Errors are LiveError(key): `key` names the text in the catalogues' [said] table (attention_lens/shell/texts/*.toml),
said by attention_lens/live/page.py in the page's language.
"""
from __future__ import annotations

import asyncio
import hmac
import secrets
import sqlite3
import sys
import time
from dataclasses import asdict, dataclass, field

from attention_lens.live.store import token_hash

MAX_CLASSES = 50
MAX_STUDENTS = 200  # a follower: about 450 kB of the app's RSS (docs/benchmarks.md 'A live class', measured below)
# students following at once over all classes: each holds one of the places of Gradio's queue for as long as it
# follows (attention_lens/live/page.py QUEUE_PLACES), so the app launches with this many more
MAX_FOLLOWING = 1000
CLASS_TTL_S = 2 * 3600  # after the teacher's last change
MAX_VIEW = 16384  # characters of a view's query (a sentence of 2,000 characters URL-encoded, and a tab's view)
MAX_KEYS = 64  # choices of a question (the keys of a row, the top-k pieces)
MAX_KEY_CHARS = 40
CODE_BYTES = 12  # 96 random bits (the issue asks for at least 64)
TOKEN_BYTES = 32
QUESTION_KINDS = ("where", "next")
MAX_LESSON = 16384  # characters of the teacher's lesson (its ?lesson=... query: assets/lesson.js MAX_LINK and view=)
AWAY_S = 20.0  # the teacher's page gone this long: her students read that she is away
BEAT_S = 5.0  # each stream yields at least this often (assets/live.js reconnects after 12 s without a word)


class LiveError(Exception):
    """A request the registry refuses; `key` is its text in [said] (attention_lens/shell/texts/*.toml)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


@dataclass
class Question:
    id: int
    kind: str  # "where": which key the highlighted row looks at; "next": which piece comes next
    keys: list[str]  # the choices, as the teacher's view shows them
    model: list[float]  # the model's own weights (where) or probabilities (next), one per key: shown at Reveal
    row: str = ""  # the row (where) or the text so far (next) the question is about
    answers: dict[str, int] = field(default_factory=dict)  # student id -> the key chosen (one per student)
    revealed: bool = False

    def counts(self) -> list[int]:
        out = [0] * len(self.keys)
        for choice in self.answers.values():
            out[choice] += 1
        return out

    @classmethod
    def from_row(cls, row: dict | None) -> Question | None:
        """The question as the store kept it (asdict), or None."""
        return None if row is None else cls(**row)


@dataclass
class Class:
    code: str
    token: str = ""  # the teacher's token, known to the process that opened the class alone (given to her once)
    token_hash: str = ""  # what the registry checks a token against (store.token_hash), and what the store keeps
    view: str = ""  # the teacher's page state as a link's query string ("" until the first change)
    step: int | None = None  # the step of that view (said to students who explore on their own)
    seq: int = 0  # counts what students see change: the view, the question, the reveal, the end
    seen: int = 0  # counts what the teacher sees change: that and the students' count and answers
    changed_at: float = field(default_factory=time.monotonic)
    students: dict[str, float] = field(default_factory=dict)  # student id -> when they joined
    holders: dict[str, object] = field(default_factory=dict, repr=False)  # student id -> the stream that holds it
    question: Question | None = None
    questions: int = 0
    lesson: str = ""  # the teacher's lesson as its query (?lesson=...&view=N), "" when she teaches none
    ended: bool = False
    teachers: int = 0  # the teacher's streams open now (her pages)
    teacher_gone: float = field(default_factory=time.monotonic)  # when the last of them closed
    away: bool = False  # said to students: no page of the teacher's for AWAY_S seconds
    _event: asyncio.Event = field(default_factory=asyncio.Event, repr=False)  # set by a change students see
    _teacher_event: asyncio.Event = field(default_factory=asyncio.Event, repr=False)  # by any change

    def bump(self, students: bool = True) -> None:
        """A change: every follower waiting for it wakes once (its event set; later ones wait on a new event). A
        student joining or answering wakes the teacher's stream only."""
        self.seen += 1
        event, self._teacher_event = self._teacher_event, asyncio.Event()
        event.set()
        if students:
            self.seq += 1
            event, self._event = self._event, asyncio.Event()
            event.set()

    def wake(self) -> None:
        """Every waiting student's stream looks again at the class, with nothing to yield (the teacher's last
        page gone: from now they count down to saying she is away)."""
        event, self._event = self._event, asyncio.Event()
        event.set()

    def snapshot(self, teacher: bool = False, student: str | None = None) -> dict:
        """What a follower gets: the view, the step, how many follow, the question (its answers and the model's
        own answer to the teacher at once, to students once revealed); `you`: the student's id (to answer with)."""
        q = self.question
        out = {"code": self.code, "seq": self.seq, "view": self.view, "step": self.step, "ended": self.ended,
               "students": len(self.students), "question": None, "away": self.away}
        if teacher:
            out["lesson"] = self.lesson
        if q is not None:
            shown = teacher or q.revealed
            out["question"] = {"id": q.id, "kind": q.kind, "keys": q.keys, "row": q.row, "revealed": q.revealed,
                               "answered": len(q.answers), "counts": q.counts() if shown else None,
                               "model": q.model if shown else None,
                               "mine": q.answers.get(student) if student else None}
        if student:
            out["you"] = student
        return out

    def row(self) -> dict:
        """The class as the store keeps it (attention_lens/live/store.py COLUMNS)."""
        return {"code": self.code, "token_hash": self.token_hash, "view": self.view, "step": self.step,
                "seq": self.seq, "questions": self.questions, "lesson": self.lesson,
                "question": None if self.question is None else asdict(self.question),
                "changed": time.time() - (time.monotonic() - self.changed_at)}

    @classmethod
    def from_row(cls, row: dict) -> Class:
        """A class taken back from the store; its teacher is away until her page reconnects."""
        changed = time.monotonic() - max(0.0, time.time() - row["changed"])
        return cls(code=row["code"], token_hash=row["token_hash"], view=row["view"], step=row["step"],
                   seq=row["seq"], seen=row["seq"], questions=row["questions"], lesson=row["lesson"],
                   question=Question.from_row(row["question"]), changed_at=changed)


class Registry:
    """Every class of this process (one per app: attention_lens/live/page.py). Not thread-safe by design: every call
    comes from the event loop (the page's handlers are async)."""

    def __init__(self, max_classes: int = MAX_CLASSES, max_students: int = MAX_STUDENTS, ttl_s: float = CLASS_TTL_S,
                 max_following: int = MAX_FOLLOWING, store=None):
        self.classes: dict[str, Class] = {}
        self.max_classes, self.max_students, self.ttl_s = max_classes, max_students, ttl_s
        self.max_following = max_following
        self.store = None
        if store is not None:
            self.attach(store)

    def attach(self, store) -> None:
        """Keeps every class in `store` (attention_lens/live/store.Store) from now on, and takes back the classes
        it holds that are still alive and not in this registry."""
        self.store = store
        for row in store.load(self.ttl_s):
            if row["code"] not in self.classes:
                self.classes[row["code"]] = Class.from_row(row)

    def _save(self, c: Class) -> None:
        """The class's row written; a failing disk is said on stderr and the class goes on in memory."""
        if self.store is None:
            return
        try:
            if c.ended:
                self.store.delete(c.code)
            else:
                self.store.save(c.row())
        except sqlite3.Error as e:
            print(f"live classes: could not write {self.store.path}: {e}", file=sys.stderr)

    def _alive(self, c: Class, now: float) -> bool:
        return not c.ended and now - c.changed_at < self.ttl_s

    def sweep(self) -> None:
        """Ends the classes whose teacher changed nothing for ttl_s (their followers are woken to say so)."""
        now = time.monotonic()
        for code, c in list(self.classes.items()):
            if not self._alive(c, now):
                self._end(c)

    def _end(self, c: Class) -> None:
        c.ended = True
        self.classes.pop(c.code, None)
        self._save(c)
        c.bump()

    def _check_away(self, c: Class) -> None:
        """The teacher away once no page of hers has followed for AWAY_S: said to her students (a change)."""
        if not c.ended and not c.away and c.teachers == 0 and time.monotonic() - c.teacher_gone >= AWAY_S:
            c.away = True
            c.bump()

    def open(self) -> Class:
        self.sweep()
        if len(self.classes) >= self.max_classes:
            raise LiveError("class_full")
        token = secrets.token_urlsafe(TOKEN_BYTES)
        c = Class(code=secrets.token_urlsafe(CODE_BYTES), token=token, token_hash=token_hash(token))
        self.classes[c.code] = c
        self._save(c)
        return c

    def get(self, code) -> Class:
        """The class of a code; the same message for a wrong code as for an ended one (a code says nothing more)."""
        c = self.classes.get(code) if isinstance(code, str) else None
        if c is None or not self._alive(c, time.monotonic()):
            if c is not None:
                self._end(c)
            raise LiveError("class_unknown")
        return c

    def teacher(self, code, token) -> Class:
        """The class, if `token` is its teacher's (compared in constant time); else LiveError."""
        c = self.get(code)
        if not isinstance(token, str) or not hmac.compare_digest(token_hash(token), c.token_hash):
            raise LiveError("class_not_teacher")
        return c

    def change(self, code, token, view, step=None, lesson=None) -> Class:
        """The teacher's view (a link's query) and its step; `lesson`: her lesson's query, "" for none, None to
        keep the one the class has."""
        c = self.teacher(code, token)
        if not isinstance(view, str) or len(view) > MAX_VIEW:
            raise LiveError("class_bad_view")
        if lesson is not None and (not isinstance(lesson, str) or len(lesson) > MAX_LESSON):
            raise LiveError("class_bad_view")
        view = view.lstrip("?")
        c.view, c.step = view, step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else None
        if lesson is not None:
            c.lesson = lesson.lstrip("?")
        c.changed_at = time.monotonic()
        self._save(c)
        c.bump()
        return c

    def close(self, code, token) -> None:
        self._end(self.teacher(code, token))

    def join(self, code, student=None) -> tuple[Class, str]:
        """A student of the class: (the class, their id). `student`: the id their page had before its stream dropped
        (a restart, or a stream the page stopped hearing), kept so that their answer stays theirs; a stream that
        still holds it gives it up (follow), so the student is counted once."""
        c = self.get(code)
        again = isinstance(student, str) and len(student) == 16 and student.isascii() \
            and student.replace("-", "").replace("_", "").isalnum()
        if again and student in c.students:  # the same page again: taken over from its old stream
            return c, student
        if len(c.students) >= self.max_students:
            raise LiveError("class_students_full")
        if sum(len(other.students) for other in self.classes.values()) >= self.max_following:
            raise LiveError("class_server_full")
        sid = student if again else secrets.token_urlsafe(12)
        c.students[sid] = time.monotonic()
        c.bump(students=False)  # the teacher's count follows
        return c, sid

    def leave(self, c: Class, sid: str) -> None:
        if c.students.pop(sid, None) is not None and not c.ended:
            c.bump(students=False)

    def ask(self, code, token, kind, keys, model, row="") -> Question:
        c = self.teacher(code, token)
        ok = (kind in QUESTION_KINDS and isinstance(keys, list) and isinstance(model, list)
              and 0 < len(keys) <= MAX_KEYS and len(model) == len(keys)
              and all(isinstance(k, str) for k in keys)
              and all(isinstance(p, (int, float)) and not isinstance(p, bool) and 0 <= p <= 1 for p in model))
        if not ok:
            raise LiveError("class_bad_question")
        c.questions += 1
        c.question = Question(c.questions, kind, [k[:MAX_KEY_CHARS] for k in keys], [float(p) for p in model],
                              str(row)[:200])
        c.changed_at = time.monotonic()
        self._save(c)
        c.bump()
        return c.question

    def answer(self, code, sid, qid, choice) -> Question:
        """A student's answer: counted once per student and question (a second one replaces the first)."""
        c = self.get(code)
        q = c.question
        if not isinstance(sid, str) or sid not in c.students:
            raise LiveError("class_not_student")
        if q is None or qid != q.id or q.revealed:
            raise LiveError("class_question_over")
        if not isinstance(choice, int) or isinstance(choice, bool) or not 0 <= choice < len(q.keys):
            raise LiveError("class_bad_answer")
        q.answers[sid] = choice
        self._save(c)
        c.bump(students=False)
        return q

    def reveal(self, code, token, qid) -> Question:
        c = self.teacher(code, token)
        if c.question is None or c.question.id != qid:
            raise LiveError("class_question_over")
        c.question.revealed = True
        c.changed_at = time.monotonic()
        self._save(c)
        c.bump()
        return c.question

    async def follow(self, code, teacher_token=None, student=None):
        """Yields the class's snapshot now, after every change until it ends (the last one says `ended`) and, with
        nothing changed, every BEAT_S seconds (`beat` counted up). A student is counted while following (`student`:
        their id before, see join); the teacher (with the token) is not a student: her streams are her presence."""
        c = self.teacher(code, teacher_token) if teacher_token else self.get(code)
        sid = None
        if teacher_token:
            c.teachers += 1
            if c.away:
                c.away = False
                c.bump()
        else:
            c, sid = self.join(code, student)
            mine = c.holders[sid] = object()
            c.wake()  # an old stream of this id ends at once (below)
        mark = (lambda: c.seen) if teacher_token else (lambda: c.seq)
        try:
            seen, beat = None, 0
            while True:
                if mark() != seen:
                    seen = mark()
                    yield {**c.snapshot(teacher=bool(teacher_token), student=sid), "beat": beat}
                if c.ended:
                    return
                event = c._teacher_event if teacher_token else c._event
                now = time.monotonic()
                wait = min(c.changed_at + self.ttl_s - now, BEAT_S)
                if c.teachers == 0 and not c.away:
                    wait = min(wait, c.teacher_gone + AWAY_S - now)
                timed_out = False
                try:
                    await asyncio.wait_for(event.wait(), timeout=max(0.01, wait))
                except TimeoutError:
                    timed_out = True
                if sid is not None and c.holders.get(sid) is not mine:
                    return  # a newer stream of the same page holds this student
                if timed_out:
                    self.sweep()
                    self._check_away(c)
                    if mark() == seen and not c.ended:  # nothing changed: the heartbeat
                        beat += 1
                        yield {**c.snapshot(teacher=bool(teacher_token), student=sid), "beat": beat}
        finally:
            if sid is not None and c.holders.get(sid) is mine:
                del c.holders[sid]
                self.leave(c, sid)
            if teacher_token:
                c.teachers -= 1
                if c.teachers == 0:
                    c.teacher_gone = time.monotonic()
                    c.wake()

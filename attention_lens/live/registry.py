"""Live classes, with no Gradio in them: a registry of classes, each one teacher's view that students
follow. A class is a short code (the student link's `?class=<code>`, typed from a projector:
attention_lens/live/access.py) and a teacher token (256 random bits) that alone may change it. The class's view is the
page state the app already writes into a link (assets/shell/link.js `url()`: a query string); the teacher's page sends
it on every change and each student's page opens it as a link (#link_box's .link.open, assets/shell/link.js), so a
class shows exactly what a link would.

Followers wait on an asyncio.Event that the next change sets (then a new one is made): a change wakes each waiting
follower once; nothing polls. Bounds: MAX_CLASSES classes x MAX_STUDENTS students; a class ends CLASS_TTL_S after the
teacher's last change (or when the teacher closes it); at most MAX_FOLLOWING streams follow at once over all
classes; one client (attention_lens/live/access.py) opens at most MAX_CLASSES_PER_CLIENT classes, holds at most
MAX_STREAMS_PER_CLIENT streams and tries wrong codes at a bounded rate.

A student is a browser (the id its page keeps in the browser's storage, sent with each stream and answer), however
many tabs or streams it has: one in the count, one vote per question. A stream counts once its reader has read its
first snapshot and said so (`confirm` with the snapshot's `stream`, a secret only the reader has); one that does
not within CONFIRM_S (a join that never reads its stream) gets no snapshot after its first and ends. A page closed
ends its streams at once (`gone`, called with its Gradio session when Gradio unloads it), and a page that follows
anew (it stopped hearing its stream) ends its old one at once (the same session and browser id, in `join`).

Memory: one follower costs its Gradio session (its SessionState, the config of the page's 219 blocks: 329 kB
by tracemalloc), its event and its stream, about 450 kB of the app's RSS (python -m benchmarks.live_class --students
60, 120, 200: +26.5, +52.9, +87.9 MB; docs/benchmarks.md 'A live class'), so MAX_FOLLOWING followers hold about 450
MB: the bounds keep a process's worst case below its machine's memory. Gradio keeps a session until its least
recently used place is needed, so the app's places for followers' sessions (attention_lens/live/page.py SESSION_PLACES)
may hold the sessions of followers who left: about 1,100 x 330 kB = 360 MB at most, with no one following.

Kept over a restart: with a store (attention_lens/live/store.py, attached by attention_lens/live/page.py) every change
of a class is written to its SQLite row, an ended class's row deleted, and a new process takes back the classes still
alive. The store keeps the SHA-256 of the teacher's token, never the token: the token is in the teacher's browser
alone, and her page sends it again after a reload or a restart. Of a student it keeps only their answer to the open
question, under their browser's id (a random string the browser made: no name, no address); of the teacher no
address either (a class taken back counts against her client's cap again once her page follows it). The streams are
not kept: a page reconnecting after a restart joins again with its browser's id, and its answer is its own again.

The teacher's presence: her page's stream counts while it is open; when none has been open for AWAY_S seconds the
students' snapshots say `away` (and stop saying it when she is back). Every stream yields a heartbeat every BEAT_S
seconds (its snapshot with `beat` counted up): Gradio notices a closed page only when its stream yields, and a page
that has heard nothing for a while knows its stream dropped and reconnects (assets/live/live.js).

Errors are LiveError(key): `key` names the text in the catalogues' [said] table (attention_lens/shell/texts/*.toml),
said by attention_lens/live/page.py in the page's language.
"""
from __future__ import annotations

import asyncio
import hmac
import math
import secrets
import sqlite3
import sys
import time
from dataclasses import asdict, dataclass, field

from attention_lens.live import access
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
MAX_ROW_CHARS = 200
MAX_STEP = 10000  # a view's step (a sentence of the longest model has a few hundred)
TOKEN_BYTES = 32
MAX_CLASSES_PER_CLIENT = 3  # a school's teachers behind one address open a few
# a whole class behind one school address, with a second tab each for a fifth of them
MAX_STREAMS_PER_CLIENT = MAX_STUDENTS + 40
CONFIRM_S = 20.0  # a stream whose reader has not said it read its first snapshot by then ends (a ghost)
STUDENT_ID = 64  # characters of a browser's id at most
QUESTION_KINDS = ("where", "next")
MAX_LESSON = 16384  # characters of the teacher's lesson (its ?lesson=... query: shell/lesson.js MAX_LINK and view=)
AWAY_S = 20.0  # the teacher's page gone this long: her students read that she is away
BEAT_S = 5.0  # each stream yields at least this often (assets/live/live.js reconnects after 12 s without a word)


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
    answers: dict[str, int] = field(default_factory=dict)  # student (a browser) -> the key chosen (one per student)
    revealed: bool = False

    def counts(self, present=None) -> list[int]:
        """Each key's answers, of the students in `present` (all when None)."""
        out = [0] * len(self.keys)
        for sid, choice in self.answers.items():
            if present is None or sid in present:
                out[choice] += 1
        return out

    @classmethod
    def from_row(cls, row: dict | None) -> Question | None:
        """The question as the store kept it (asdict), or None."""
        return None if row is None else cls(**row)


@dataclass
class Stream:
    """One follower's stream: a tab of a student's browser, or a program's /follow."""
    student: str  # the browser's id (one student however many streams)
    client: str  # attention_lens/live/access.py client_key
    session: str | None  # its Gradio session (its page closed: `gone`)
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(12))  # in its first snapshot: `confirm`s it
    opened_at: float = field(default_factory=time.monotonic)
    confirmed: bool = False
    gone: bool = False


@dataclass
class Class:
    code: str
    token: str = ""  # the teacher's token, known to the process that opened the class alone (given to her once)
    token_hash: str = ""  # what the registry checks a token against (store.token_hash), and what the store keeps
    # who opened it (attention_lens/live/access.py client_key); None for a class taken back from the store (its
    # client is not kept) until its teacher's page follows it again
    client: str | None = ""
    view: str = ""  # the teacher's page state as a link's query string ("" until the first change)
    step: int | None = None  # the step of that view (said to students who explore on their own)
    seq: int = 0  # counts what students see change: the view, the question, the reveal, the end
    seen: int = 0  # counts what the teacher sees change: that and the students' count and answers
    changed_at: float = field(default_factory=time.monotonic)
    streams: dict[str, Stream] = field(default_factory=dict)  # the followers' streams, by their secret
    question: Question | None = None
    questions: int = 0
    lesson: str = ""  # the teacher's lesson as its query (?lesson=...&view=N), "" when she teaches none
    ended: bool = False
    teachers: int = 0  # the teacher's streams open now (her pages)
    teacher_gone: float = field(default_factory=time.monotonic)  # when the last of them closed
    away: bool = False  # said to students: no page of the teacher's for AWAY_S seconds
    _event: asyncio.Event = field(default_factory=asyncio.Event, repr=False)  # set by a change students see
    _teacher_event: asyncio.Event = field(default_factory=asyncio.Event, repr=False)  # by any change

    @property
    def students(self) -> set[str]:
        """The students following: the browsers with a confirmed stream open."""
        return {s.student for s in self.streams.values() if s.confirmed and not s.gone}

    def bump(self, students: bool = True) -> None:
        """A change: every follower waiting for it wakes once (its event set; later ones wait on a new event). A
        student joining or answering wakes the teacher's stream only."""
        self.seen += 1
        event, self._teacher_event = self._teacher_event, asyncio.Event()
        event.set()
        if students:
            self.seq += 1
            self.wake()

    def wake(self) -> None:
        """Every follower's stream wakes and looks again, with nothing new to yield: at its own state (gone,
        confirmed) and at the teacher's (her last page gone: from now it counts down to saying she is away)."""
        event, self._event = self._event, asyncio.Event()
        event.set()

    def snapshot(self, teacher: bool = False, student: str | None = None) -> dict:
        """What a follower gets: the view, the step, how many follow, the question (its answers and the model's
        own answer to the teacher at once, to students once revealed); `you`: the student's id (to answer with).
        The answers counted are the students' following now (one who left takes theirs along)."""
        q = self.question
        present = self.students
        out = {"code": self.code, "seq": self.seq, "view": self.view, "step": self.step, "ended": self.ended,
               "students": len(present), "question": None, "away": self.away}
        if teacher:
            out["lesson"] = self.lesson
        if q is not None:
            shown = teacher or q.revealed
            out["question"] = {"id": q.id, "kind": q.kind, "keys": q.keys, "row": q.row, "revealed": q.revealed,
                               "answered": sum(1 for sid in q.answers if sid in present),
                               "counts": q.counts(present) if shown else None,
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
        """A class taken back from the store; its teacher is away until her page reconnects (and its client
        unknown until then: the store keeps no address)."""
        changed = time.monotonic() - max(0.0, time.time() - row["changed"])
        return cls(code=row["code"], token_hash=row["token_hash"], client=None, view=row["view"], step=row["step"],
                   seq=row["seq"], seen=row["seq"], questions=row["questions"], lesson=row["lesson"],
                   question=Question.from_row(row["question"]), changed_at=changed)


def _text(value, most: int) -> bool:
    """A string of at most `most` characters that JSON can carry (no lone surrogate)."""
    if not isinstance(value, str) or len(value) > most:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _query(value, most: int) -> bool:
    """A link's query string as a URL writes it: printable ASCII, at most `most` characters."""
    return isinstance(value, str) and len(value) <= most and value.isascii() and value.isprintable()


class Registry:
    """Every class of this process (one per app: attention_lens/live/page.py). Not thread-safe by design: every call
    comes from the event loop (the page's handlers are async)."""

    def __init__(self, max_classes: int = MAX_CLASSES, max_students: int = MAX_STUDENTS, ttl_s: float = CLASS_TTL_S,
                 max_following: int = MAX_FOLLOWING, per_client: int = MAX_CLASSES_PER_CLIENT,
                 streams_per_client: int = MAX_STREAMS_PER_CLIENT, confirm_s: float = CONFIRM_S,
                 wrong_codes: access.WrongCodes | None = None, store=None):
        self.classes: dict[str, Class] = {}
        self.max_classes, self.max_students, self.ttl_s = max_classes, max_students, ttl_s
        self.max_following = max_following
        self.per_client, self.streams_per_client, self.confirm_s = per_client, streams_per_client, confirm_s
        self.wrong_codes = wrong_codes or access.WrongCodes()
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

    def open(self, client: str = "") -> Class:
        self.sweep()
        if len(self.classes) >= self.max_classes:
            raise LiveError("class_full")
        if sum(1 for c in self.classes.values() if c.client == client) >= self.per_client:
            raise LiveError("class_client_full")
        code = access.new_code()
        while code in self.classes:
            code = access.new_code()
        token = secrets.token_urlsafe(TOKEN_BYTES)
        c = Class(code=code, token=token, token_hash=token_hash(token), client=client)
        self.classes[c.code] = c
        self._save(c)
        return c

    def get(self, code, client: str = "") -> Class:
        """The class of a code, typed in any case; the same message for a wrong code as for an ended one (a code
        says nothing more). A wrong code spends one of the client's guesses; a client with none left is refused
        before its code is looked at (attention_lens/live/access.py WrongCodes)."""
        if not self.wrong_codes.allowed(client):
            raise LiveError("class_wrong_codes")
        key = access.normalize(code)
        c = self.classes.get(key) if key else None
        if c is None or not self._alive(c, time.monotonic()):
            if c is not None:
                self._end(c)
            self.wrong_codes.wrong(client)
            raise LiveError("class_unknown")
        return c

    def teacher(self, code, token, client: str = "") -> Class:
        """The class, if `token` is its teacher's (compared in constant time); else LiveError."""
        c = self.get(code, client)
        if not isinstance(token, str) or not hmac.compare_digest(token_hash(token), c.token_hash):
            raise LiveError("class_not_teacher")
        return c

    def change(self, code, token, view, step=None, lesson=None, client: str = "") -> Class:
        """The teacher's view: a link's query string (printable ASCII, as a URL's query is written) of at most
        MAX_VIEW characters, and its step (None, or a whole number to MAX_STEP); `lesson`: her lesson's query (the
        same kind of string, at most MAX_LESSON), "" for none, None to keep the one the class has. Anything else is
        refused and the class and its followers keep the view they have."""
        c = self.teacher(code, token, client)
        if not _query(view, MAX_VIEW) or (lesson is not None and not _query(lesson, MAX_LESSON)):
            raise LiveError("class_bad_view")
        if step is not None and (not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= MAX_STEP):
            raise LiveError("class_bad_step")
        view = view.lstrip("?")
        if c.question is not None and c.question.revealed and view != c.view:
            c.question = None  # the teacher moved on: the revealed answer was about the view before
        c.view, c.step = view, step
        if lesson is not None:
            c.lesson = lesson.lstrip("?")
        c.changed_at = time.monotonic()
        self._save(c)
        c.bump()
        return c

    def close(self, code, token, client: str = "") -> None:
        self._end(self.teacher(code, token, client))

    def join(self, code, student=None, session=None, client: str = "") -> tuple[Class, Stream]:
        """A new stream of the class for the browser `student` (its id, which it keeps: a page reconnecting after a
        restart is the same student, its answer still its own; a new student's id when None: a program's /follow);
        counted once its reader confirms it. Refused past the class's, the server's and the client's bounds."""
        c = self.get(code, client)
        if student is not None and not (_text(student, STUDENT_ID) and student.isascii() and student.strip()):
            raise LiveError("class_bad_request")
        sid = student or secrets.token_urlsafe(12)
        if sid not in {s.student for s in c.streams.values()} and \
                len({s.student for s in c.streams.values()}) >= self.max_students:
            raise LiveError("class_students_full")
        streams = [s for other in self.classes.values() for s in other.streams.values()]
        if len(streams) >= self.max_following:
            raise LiveError("class_server_full")
        session = session if isinstance(session, str) else None
        # the same page again (its Gradio session and its browser's id: a page that stopped hearing its stream
        # follows anew while the old one may still be open): the old stream ends at once, its place to this one
        old = [s for s in c.streams.values()
               if student is not None and session is not None and (s.session, s.student) == (session, sid)
               and not s.gone]
        if sum(1 for s in streams if s.client == client) - len(old) >= self.streams_per_client:
            raise LiveError("class_client_streams")
        for s in old:
            s.gone = True
        if old:
            c.bump(students=False)
            c.wake()
        stream = Stream(student=sid, client=client, session=session)
        c.streams[stream.secret] = stream
        return c, stream

    def confirm(self, code, secret, client: str = "") -> None:
        """The reader of a stream has read its first snapshot (it sends the snapshot's `stream`): it counts."""
        c = self.get(code, client)
        stream = c.streams.get(secret) if isinstance(secret, str) else None
        if stream is None or stream.gone:
            raise LiveError("class_not_student")
        if not stream.confirmed:
            stream.confirmed = True
            c.bump(students=False)  # the teacher's count follows
            c.wake()  # a change it missed while unconfirmed: sent now

    def leave(self, c: Class, stream: Stream) -> None:
        """A stream ended; its student leaves the count with their last stream."""
        if c.streams.pop(stream.secret, None) is not None and stream.confirmed and not c.ended:
            c.bump(students=False)

    def gone(self, session) -> None:
        """A page closed (its Gradio session unloaded): its streams end now, and leave the count."""
        for c in list(self.classes.values()):
            mine = [s for s in c.streams.values() if s.session == session and not s.gone]
            for s in mine:
                s.gone = True
            if mine:
                c.bump(students=False)
                c.wake()

    def ask(self, code, token, kind, keys, model, row="", client: str = "") -> Question:
        c = self.teacher(code, token, client)
        ok = (kind in QUESTION_KINDS and isinstance(keys, list) and isinstance(model, list)
              and 0 < len(keys) <= MAX_KEYS and len(model) == len(keys)
              and all(_text(k, 10 * MAX_KEY_CHARS) for k in keys) and _text(row, 10 * MAX_ROW_CHARS)
              and all(isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p) and 0 <= p <= 1
                      for p in model))
        if not ok:
            raise LiveError("class_bad_question")
        c.questions += 1
        c.question = Question(c.questions, kind, [k[:MAX_KEY_CHARS] for k in keys], [float(p) for p in model],
                              row[:MAX_ROW_CHARS])
        c.changed_at = time.monotonic()
        self._save(c)
        c.bump()
        return c.question

    def answer(self, code, sid, qid, choice, client: str = "") -> Question:
        """A student's answer: counted once per student (browser) and question (a second one replaces the first)."""
        c = self.get(code, client)
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

    def reveal(self, code, token, qid, client: str = "") -> Question:
        c = self.teacher(code, token, client)
        if c.question is None or c.question.id != qid:
            raise LiveError("class_question_over")
        c.question.revealed = True
        c.changed_at = time.monotonic()
        self._save(c)
        c.bump()
        return c.question

    async def follow(self, code, teacher_token=None, student=None, session=None, client: str = ""):
        """Yields the class's snapshot now, after every change until it ends (the last one says `ended`) and, with
        nothing changed, every BEAT_S seconds (`beat` counted up). A student's stream (`student`: the browser's id,
        see join): its first snapshot carries `stream` (the secret to `confirm` it with); unconfirmed it gets
        nothing more, no beat either, and ends after confirm_s; a closed page's (`gone`) ends at once. The teacher
        (with the token) is not a student: her streams are her presence."""
        if teacher_token:
            async for snap in self._teach(code, teacher_token, client):
                yield snap
            return
        c, stream = self.join(code, student, session, client)
        try:
            seen, beat, said = None, 0, time.monotonic()
            while not stream.gone:
                if (seen is None or stream.confirmed) and c.seq != seen:
                    first = seen is None
                    seen, said = c.seq, time.monotonic()
                    snap = {**c.snapshot(student=stream.student), "beat": beat}
                    if first:
                        snap["stream"] = stream.secret
                    yield snap
                    continue  # a change while the snapshot was being sent: sent next, not at the change after it
                if c.ended:
                    return
                now = time.monotonic()
                wait = min(c.changed_at + self.ttl_s, said + BEAT_S) - now
                if c.teachers == 0 and not c.away:
                    wait = min(wait, c.teacher_gone + AWAY_S - now)
                if not stream.confirmed:
                    if now - stream.opened_at >= self.confirm_s:
                        return  # never read: a ghost
                    wait = min(wait, stream.opened_at + self.confirm_s - now)
                try:
                    await asyncio.wait_for(c._event.wait(), timeout=max(0.01, wait))
                except TimeoutError:
                    self.sweep()
                    self._check_away(c)
                    if stream.confirmed and not stream.gone and c.seq == seen and not c.ended \
                            and time.monotonic() - said >= BEAT_S:  # nothing changed: the heartbeat
                        beat, said = beat + 1, time.monotonic()
                        yield {**c.snapshot(student=stream.student), "beat": beat}
        finally:
            self.leave(c, stream)

    async def _teach(self, code, token, client: str):
        """The teacher's stream: the class's snapshot (answers and the model's at once) at each change it sees, and
        a beat every BEAT_S with nothing changed. While one is open she is present (her students are not told she
        is away); a class taken back from the store is her client's again."""
        c = self.teacher(code, token, client)
        if c.client is None:
            c.client = client
        c.teachers += 1
        if c.away:
            c.away = False
            c.bump()
        try:
            seen, beat, said = None, 0, time.monotonic()
            while True:
                if c.seen != seen:
                    seen, said = c.seen, time.monotonic()
                    yield {**c.snapshot(teacher=True), "beat": beat}
                    continue
                if c.ended:
                    return
                try:
                    await asyncio.wait_for(c._teacher_event.wait(),
                                           timeout=max(0.01, min(c.changed_at + self.ttl_s, said + BEAT_S)
                                                       - time.monotonic()))
                except TimeoutError:
                    self.sweep()
                    if c.seen == seen and not c.ended and time.monotonic() - said >= BEAT_S:
                        beat, said = beat + 1, time.monotonic()
                        yield {**c.snapshot(teacher=True), "beat": beat}
        finally:
            c.teachers -= 1
            if c.teachers == 0:
                c.teacher_gone = time.monotonic()
                c.wake()

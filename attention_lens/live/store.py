"""Where live classes outlive their process: one SQLite database (the standard library's sqlite3, in WAL mode) in
the app's data folder, with no Gradio in it. attention_lens/live/registry.py writes a class's row at each change
and deletes it when the class ends; a new process reads back the classes still alive (docs/reliability.md 'Live
classes': what a row holds and for how long).

A row: the code, the SHA-256 of the teacher's token (never the token), the view, its step, the change counter, the
questions asked so far, the open question with its answers (each under the student's browser's id: a random string
the browser made and keeps, no name, no address; nothing else of a student), the teacher's lesson, and the
wall-clock time of the teacher's last change. No address of anyone, and no stream: who follows is the process's.

The folder: `--data-dir DIR` (attention_lens/launch.py), else the environment's ATTENTION_LENS_DATA, else the user's
data folder (platformdirs: ~/.local/share/attention-lens on Linux).
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

DATA_ENV = "ATTENTION_LENS_DATA"
FILE = "classes.sqlite3"
SCHEMA = """CREATE TABLE IF NOT EXISTS classes (
  code TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL,
  view TEXT NOT NULL,
  step INTEGER,
  seq INTEGER NOT NULL,
  questions INTEGER NOT NULL,
  question TEXT,
  lesson TEXT NOT NULL,
  changed REAL NOT NULL
)"""
COLUMNS = ("code", "token_hash", "view", "step", "seq", "questions", "question", "lesson", "changed")


def data_dir() -> Path:
    """The folder of the app's data: ATTENTION_LENS_DATA, else the user's data folder for attention-lens."""
    given = os.environ.get(DATA_ENV)
    if given:
        return Path(given).expanduser()
    import platformdirs
    return Path(platformdirs.user_data_dir("attention-lens", appauthor=False))


def token_hash(token: str) -> str:
    """What the database keeps of a teacher's token: its SHA-256 (a token is 256 random bits: no salt needed)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class Store:
    """The classes' table in `folder`/classes.sqlite3. One connection, used from the event loop's thread only (as
    the registry is); each write is its own transaction (synchronous=NORMAL: WAL keeps the file consistent after a
    crash, the last writes of a power cut may be lost)."""

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / FILE
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(SCHEMA)

    def save(self, row: dict) -> None:
        """Writes one class's row (a new one, or over the old)."""
        values = [row[k] for k in COLUMNS]
        values[COLUMNS.index("question")] = None if row["question"] is None else json.dumps(row["question"])
        self.db.execute(f"INSERT OR REPLACE INTO classes ({', '.join(COLUMNS)})"
                        f" VALUES ({', '.join('?' * len(COLUMNS))})", values)

    def delete(self, code: str) -> None:
        self.db.execute("DELETE FROM classes WHERE code = ?", (code,))

    def load(self, ttl_s: float) -> list[dict]:
        """The classes whose teacher changed something less than ttl_s ago; the older ones are deleted."""
        now = time.time()
        self.db.execute("DELETE FROM classes WHERE changed <= ?", (now - ttl_s,))
        rows = [dict(zip(COLUMNS, r)) for r in self.db.execute(f"SELECT {', '.join(COLUMNS)} FROM classes")]
        for r in rows:
            r["question"] = None if r["question"] is None else json.loads(r["question"])
        return rows

    def close(self) -> None:
        self.db.close()

"""Logins of the app (needed with --share): --auth-file FILE, the environment variable ATTENTION_LENS_AUTH, --auth.

Imports nothing large: app.py reads the logins before gradio, torch or the library are loaded."""
from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

AUTH_ENV = "ATTENTION_LENS_AUTH"


def parse_auth(value: str | None):
    """'user:password' -> (user, password); None for no value; SystemExit for a malformed one."""
    if not value:
        return None
    if ":" not in value:
        raise SystemExit("a login must look like user:password")
    user, password = value.split(":", 1)
    if not user or not password:
        raise SystemExit("a login must look like user:password (both non-empty)")
    return (user, password)


def read_auth_file(path: str) -> list[tuple[str, str]]:
    """The logins of an --auth-file: one user:password per line, `#` comments and blank lines ignored.
    Read as UTF-8 with or without a byte order mark (Notepad writes one); only the line ending is removed,
    so a password keeps its leading and trailing spaces. Warns when others may read the file."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        mode = os.stat(path).st_mode
    except (OSError, UnicodeDecodeError) as e:
        raise SystemExit(f"--auth-file: cannot read {path}: {getattr(e, 'strerror', None) or e}")
    if os.name == "posix" and mode & 0o044:
        print(f"WARNING: --auth-file {path} can be read by other users of this machine (mode {mode & 0o777:03o}); "
              f"chmod 600 {path}", file=sys.stderr)
    logins = parse_lines(text.split("\n"), f"--auth-file {path}")  # universal newlines: \r\n and \r are \n here
    if not logins:
        raise SystemExit(f"--auth-file {path} holds no user:password line")
    return logins


def parse_lines(lines, where: str, unit: str = "line") -> list[tuple[str, str]]:
    """The logins of `lines`: blank ones and `#` comments skipped, each other one user:password with the password
    as given (its spaces kept) and a user name that neither starts nor ends with a space. A malformed one exits,
    naming `where` and its number (`unit` 1, 2, ...)."""
    logins = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            user, password = parse_auth(line)
        except SystemExit as e:
            raise SystemExit(f"{where}, {unit} {number}: {e.code}") from None
        if user != user.strip():
            raise SystemExit(f"{where}, {unit} {number}: the user name {user!r} starts or ends with a space")
        logins.append((user, password))
    return logins


def env_logins(value: str) -> list[tuple[str, str]]:
    """The logins of ATTENTION_LENS_AUTH, read as an --auth-file's lines are (passwords keep their spaces):
    separated by commas ("ann:one,bob:two"; spaces after a comma, before the next user, are ignored), or, when
    the value holds a line break, one per line exactly as in the file, where a password may hold a comma
    (ATTENTION_LENS_AUTH="$(cat logins)", or $'ann:a,b\nbob:c' in bash)."""
    if "\n" in value or "\r" in value:
        return parse_lines(value.replace("\r\n", "\n").replace("\r", "\n").split("\n"), AUTH_ENV)
    return parse_lines([v.lstrip() for v in value.split(",")], AUTH_ENV, "login")


def read_logins(args, environ=os.environ) -> list[tuple[str, str]]:
    """Every login given by --auth-file, ATTENTION_LENS_AUTH and --auth (with a warning for the last).
    A user given twice is refused: which of two passwords holds would otherwise be a silent choice."""
    logins = read_auth_file(args.auth_file) if args.auth_file else []
    if environ.get(AUTH_ENV):
        logins += env_logins(environ[AUTH_ENV])
    if args.auth:
        print("WARNING: --auth puts the password in the process list, readable by every user of this machine; "
              f"use --auth-file FILE or {AUTH_ENV} instead.", file=sys.stderr)
        logins.append(parse_auth(args.auth))
    users = [u for u, _ in logins]
    twice = sorted({u for u in users if users.count(u) > 1})
    if twice:
        raise SystemExit(f"logins: the user {', '.join(map(repr, twice))} is given more than once "
                         f"(--auth-file, {AUTH_ENV} and --auth together); give each user one password")
    return logins


def loopback(host: str) -> bool:
    """Whether only this machine reaches a server bound to `host`: localhost, 127.x.x.x, ::1."""
    host = str(host).strip().strip("[]").lower()
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: only localhost's are known without asking a resolver
        return host == "localhost" or host.endswith(".localhost")


def open_warnings(host: str, share: bool, logins) -> list[str]:
    """What the app warns about before it launches: a page that others reach, served without logins (--share, or
    a --host other machines can connect to, such as 0.0.0.0)."""
    if logins:
        return []
    said = ["--share without logins: anyone with the link can use this app and its compute."] if share else []
    if not loopback(host):
        said.append(f"--host {host} without logins: anyone who can reach this machine on its port can use this app "
                    "and its compute (give logins, or --host 127.0.0.1).")
    return said

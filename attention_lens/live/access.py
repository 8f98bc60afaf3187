"""Who may reach a live class, with no Gradio in it: the short class code a student types from a projector, the
client (its address) a request comes from, and the per-client budget of wrong codes.

A code is CODE_LEN characters of CODE_ALPHABET, which leaves out the characters read or typed as another (0 and O,
1, I and L, U and V), so 30 ** 8 = 6.6e11 codes; typed codes are read case-insensitively, with spaces and dashes
ignored ("k7qm-4xrt" is "K7QM4XRT"). How many guesses a class can take before it ends and why that is enough:
docs/reliability.md 'Live classes'.

A client is the address of its request (Gradio's gr.Request.client.host: uvicorn puts the address of
X-Forwarded-For there when the request comes through a proxy it trusts, FORWARDED_ALLOW_IPS), IPv6 addresses by
their /64 (one household's or school's prefix, of which a client has 2 ** 64 addresses to pick).
"""
from __future__ import annotations

import ipaddress
import secrets
import time

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_LEN = 8
# wrong codes a client may try: WRONG_BURST at once, then one every WRONG_EVERY_S (a class behind one school address
# mistyping now and then never meets it; a guesser gets 10 + 600 guesses an hour)
WRONG_BURST = 10
WRONG_EVERY_S = 6.0
MAX_CLIENTS_KEPT = 10000  # budgets kept at once; a full budget is dropped first (it is the same as none)


def new_code() -> str:
    """A fresh random code (secrets: unpredictable)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LEN))


def normalize(code) -> str | None:
    """The code a student typed or a link holds, as the registry keys it (upper case, no spaces or dashes), or None
    when it cannot be a code (not a string, too long, a character outside the alphabet)."""
    if not isinstance(code, str) or len(code) > 4 * CODE_LEN:
        return None
    code = "".join(code.split()).replace("-", "").upper()
    if len(code) != CODE_LEN or any(ch not in CODE_ALPHABET for ch in code):
        return None
    return code


def client_key(host) -> str:
    """The client of an address: the address itself, an IPv6 one by its /64; "" when none is known (a call from
    this process: every such call is one client)."""
    if not isinstance(host, str) or not host:
        return ""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host[:64]
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


class WrongCodes:
    """Each client's budget of wrong codes: a token bucket of WRONG_BURST, refilled one per WRONG_EVERY_S."""

    def __init__(self, burst: int = WRONG_BURST, every_s: float = WRONG_EVERY_S, kept: int = MAX_CLIENTS_KEPT):
        self.burst, self.every_s, self.kept = burst, every_s, kept
        self._left: dict[str, tuple[float, float]] = {}  # client -> (guesses left, when counted)

    def left(self, client: str) -> float:
        have, at = self._left.get(client, (self.burst, 0.0))
        return min(self.burst, have + (time.monotonic() - at) / self.every_s)

    def allowed(self, client: str) -> bool:
        """Whether the client may try a code now (one guess left)."""
        return self.left(client) >= 1

    def wrong(self, client: str) -> None:
        """A wrong code from the client: one guess spent."""
        self._left[client] = (self.left(client) - 1, time.monotonic())
        if len(self._left) > self.kept:  # the budgets refilled are dropped (they are as none)
            for k in [k for k in self._left if self.left(k) >= self.burst]:
                del self._left[k]
            while len(self._left) > self.kept:  # still too many: the oldest go
                del self._left[min(self._left, key=lambda k: self._left[k][1])]

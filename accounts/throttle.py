"""Log-in throttling: failed attempts counted in the cache per (client IP, e-mail) and per IP.

Past the limit the pair (or the IP) is locked out until its window, which starts at the first
failure, ends; a successful log-in clears the pair's count. Counting failures only means a user
who types their password right is never slowed down by someone else's guesses from another IP.
"""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

PER_IP_FACTOR = 10


def client_ip(request: HttpRequest) -> str:
    # REMOTE_ADDR only: X-Forwarded-For is whatever the client says unless a trusted proxy rewrites
    # it, and then the deployment sets REMOTE_ADDR from it (uvicorn --forwarded-allow-ips).
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def _keys(ip: str, email: str) -> tuple[str, str]:
    pair = hashlib.sha256(f"{ip}|{email.strip().lower()}".encode()).hexdigest()[:32]
    return f"login-fail:{pair}", f"login-fail-ip:{hashlib.sha256(ip.encode()).hexdigest()[:32]}"


def retry_after(ip: str, email: str) -> int:
    """Seconds until this pair may try again; 0 when it may now."""
    now = time.time()
    limit = settings.TRACERELAY_LOGIN_MAX_FAILURES
    waits = []
    for key, most in zip(_keys(ip, email), (limit, limit * PER_IP_FACTOR), strict=True):
        entry = cache.get(key)
        if entry is not None and entry[0] >= most:
            waits.append(max(1, math.ceil(entry[1] - now)))
    return max(waits, default=0)


def record_failure(ip: str, email: str) -> None:
    window = settings.TRACERELAY_LOGIN_WINDOW_S
    now = time.time()
    for key in _keys(ip, email):
        # (count, window end): a read-modify-write, so two simultaneous failures may count once;
        # the limit is a brake on guessing, and one extra guess in a window does not matter.
        count, ends = cache.get(key) or (0, now + window)
        if ends <= now:
            count, ends = 0, now + window
        cache.set(key, (count + 1, ends), timeout=max(1, math.ceil(ends - now)))


def clear(ip: str, email: str) -> None:
    cache.delete(_keys(ip, email)[0])


def describe_wait(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"

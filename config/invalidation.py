"""The invalidation bus: a change made in one process empties the other processes' in-memory caches
at once (API keys, upstreams, compiled routing, resolved integrations, team prices).

Each cache ``subscribe``s a callback to a topic; the service that changes the data calls
``publish(topic, key)`` after its transaction commits. The callback runs in this process at once,
and in every other process within milliseconds, through one Redis pub/sub channel. A callback
receives the key that changed, or None for "anything in this topic may have changed".

The hot paths stay as they were: no per-request round trip. Each process runs one daemon thread
that listens, started the first time a cache fills (`ensure_listening`, which waits up to a second
for the subscription so a fill never races past a change it could miss). The thread subscribes to
the channel (messages carry the topic and key). If the connection drops, it reconnects and then
tells every subscriber "anything may have changed", because messages sent while it was away are
lost.

The caches keep their own short TTLs as the backstop when the bus itself is down (Redis out):
then a change takes up to that TTL, as before.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)

API_KEYS = "apikeys"
UPSTREAMS = "upstreams"
ROUTING = "routing"
INTEGRATIONS = "integrations"
PII_POLICIES = "pii"
DEBUG_MODE = "debug"
PRICES = "prices"
TOPICS = (API_KEYS, UPSTREAMS, ROUTING, INTEGRATIONS, PII_POLICIES, DEBUG_MODE, PRICES)
CHANNEL = "tracerelay:invalidate"

Callback = Callable[[str | None], None]
_subscribers: dict[str, list[Callback]] = {topic: [] for topic in TOPICS}
_origin = uuid.uuid4().hex  # this process: its own messages were applied when published
_lock = threading.Lock()
_listener: _Listener | None = None


def subscribe(topic: str, callback: Callback) -> None:
    """Call ``callback(key)`` when ``topic`` changes in any process (``key`` None: anything in it)."""
    _subscribers[topic].append(callback)


def publish(topic: str, key: object = None) -> None:
    """Tell every process that ``key`` of ``topic`` changed, once the current transaction commits
    (at once outside one): before the commit a refill would read the old rows again."""
    text = None if key is None else str(key)

    def committed() -> None:
        _apply(topic, text)
        _broadcast(topic, text)

    transaction.on_commit(committed, robust=True)


def ensure_listening(timeout: float = 1.0) -> None:
    """Start this process's listener thread when it is not running (cheap when it is)."""
    global _listener
    if _listener is not None and _listener.pid == os.getpid():
        return
    with _lock:
        if _listener is None or _listener.pid != os.getpid():
            _listener = _RedisListener(settings.REDIS_URL)
            _listener.start()
    _listener.ready.wait(timeout)


def _apply(topic: str, key: str | None) -> None:
    for callback in list(_subscribers.get(topic, ())):
        try:
            callback(key)
        except Exception:
            log.exception("invalidation callback for %s failed", topic)


def _apply_all() -> None:
    for topic in TOPICS:
        _apply(topic, None)


def channel() -> str:
    """The pub/sub channel, named after the cache's key prefix: deployments (and test runs) sharing
    one Redis under different prefixes do not empty each other's caches."""
    return f"{CHANNEL}:{settings.CACHES['default'].get('KEY_PREFIX', '')}"


def _broadcast(topic: str, key: str | None) -> None:
    try:
        _redis(settings.REDIS_URL).publish(channel(), json.dumps({"t": topic, "k": key, "o": _origin}))
    except Exception:  # the caches' own TTLs still bound how long other processes serve the old value
        log.warning("could not broadcast the invalidation of %s %s", topic, key, exc_info=True)


def _redis(url: str):  # type: ignore[no-untyped-def]
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=1.0, socket_timeout=1.0)


class _Listener(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="invalidation-listener", daemon=True)
        self.pid = os.getpid()
        self.ready = threading.Event()


class _RedisListener(_Listener):
    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.channel = channel()

    def run(self) -> None:
        connected_before = False
        while True:
            try:
                pubsub = _redis(self.url).pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(self.channel)
                pubsub.get_message(timeout=1.0)  # the subscription confirmation
                if connected_before:
                    _apply_all()  # what was published while we were away is lost: drop everything
                connected_before = True
                self.ready.set()
                while True:
                    message = pubsub.get_message(timeout=30.0)
                    if message is None:
                        pubsub.ping()  # notice a dead connection within a read timeout
                        continue
                    self._handle(message.get("data"))
            except Exception:
                log.warning("invalidation: Redis subscription lost; reconnecting", exc_info=True)
                self.ready.set()  # do not hold fills up while Redis is out: TTLs take over
                time.sleep(1.0)

    def _handle(self, data: object) -> None:
        try:
            message = json.loads(data)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return
        if message.get("o") != _origin and message.get("t") in _subscribers:
            _apply(message["t"], message.get("k"))


def _after_fork() -> None:
    # A forked child (Celery's prefork pool) has no listener thread: the next fill starts its own.
    # (Prefork parents fill no caches, and calling subscribers here could meet a lock held at fork.)
    global _listener
    _listener = None


os.register_at_fork(after_in_child=_after_fork)

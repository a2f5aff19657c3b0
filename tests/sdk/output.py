"""A child process's stdout and stderr, read line by line on threads as they come.

Tests wait for the line that says what they need ("ready", a result) with a generous deadline, and never
block on a pipe: when the process ends or the deadline passes first, the failure shows everything it
printed and its exit code.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO


class OutputLines:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None and proc.stderr is not None, "start it with stdout=PIPE, stderr=PIPE"
        self.proc = proc
        self.lines: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.times: dict[str, list[float]] = {"stdout": [], "stderr": []}  # when each line arrived (monotonic)
        self.ended: float | None = None  # when the process was seen to end (monotonic)
        self._changed = threading.Condition()
        self._ended: set[str] = set()  # streams read to their end
        self._readers = [
            threading.Thread(target=self._read, args=(name, stream), daemon=True)
            for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr))
        ]
        for reader in self._readers:
            reader.start()

    @property
    def stdout(self) -> list[str]:
        return self.lines["stdout"]

    @property
    def stderr(self) -> list[str]:
        return self.lines["stderr"]

    def _read(self, name: str, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self.lines[name].append(line.rstrip("\n"))
                self.times[name].append(time.monotonic())
                self._changed.notify_all()
        with self._changed:
            self._ended.add(name)
            self._changed.notify_all()

    def wait_for(self, stream: str, wanted: Callable[[str], bool], *, timeout: float, after: int = 0) -> str:
        """The first line of `stream` from index `after` on for which `wanted` is true."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines[stream][after:]:
                    if wanted(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or stream in self._ended:
                    raise AssertionError(f"no such line on {stream} after {timeout:g} s\n{self.report()}")
                self._changed.wait(left)

    def finish(self, timeout: float) -> int:
        """The exit code, once the process has ended and both streams were read to their end."""
        code = self.proc.wait(timeout=timeout)
        self.ended = time.monotonic()
        for reader in self._readers:
            reader.join(timeout)
        return code

    def report(self) -> str:
        return (
            f"exit code: {self.proc.poll()}\n--- stdout\n"
            + "\n".join(self.stdout)
            + "\n--- stderr\n"
            + "\n".join(self.stderr)
        )

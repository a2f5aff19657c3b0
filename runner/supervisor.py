"""A small process supervisor: start programs, prefix their output, restart the ones that exit with a
backoff, stop them all in order on Ctrl-C or SIGTERM.

Why our own and not honcho or supervisord (docs/architecture.md, "bin/run"): honcho stops every
process when one exits and restarts none, which is how a worker's crash took the whole embedded
default down; supervisord restarts a running program at once, without backoff, and gives a program
that keeps failing up for good after ``startretries``; neither can wait for Postgres to accept
connections and the migrations to finish before it starts the web, nor print the logins after the
other processes' banners. This is one loop over pipes and signals.

Each program runs in a session of its own: the terminal's Ctrl-C reaches this process only, which
stops the programs in the order asked (the web and workers first, then the database), each with
its own signal, then kills whatever is left of each program's process group. On Linux each child
also gets its stop signal if this process dies (``PR_SET_PDEATHSIG``), so even a ``kill -9`` of the
supervisor leaves nothing running.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .children import child_setup, describe_exit, duration, kill_group, send_signal


class StartupFailed(Exception):
    """A program exited again and again before it was ever ready."""


@dataclass
class Program:
    """What to run and how to treat it. ``ready_line`` (a regex on its output) or ``ready_check`` (a
    call, tried every loop while not ready) say when it is up; neither: as soon as it runs.
    ``restart``: start it again when it exits; a one-shot program (``restart=False``) just ends."""

    name: str
    argv: list[str]
    env: dict[str, str] | None = None
    cwd: Path | None = None
    user: str | None = None  # run as this user (when the supervisor is root)
    stop_signal: int = signal.SIGTERM
    ready_line: str | None = None
    ready_check: Callable[[], bool] | None = None
    restart: bool = True
    kill_when_hurried: bool = True  # a second Ctrl-C kills it rather than waiting for its stop
    # Send the stop signal again this often while it runs (a program that can swallow one: Celery
    # beat, when the signal lands while it publishes a task).
    resend_stop_every: float | None = None


@dataclass
class Backoff:
    """Seconds before a restart: ``first`` after a program that ran at least ``stable_after``
    seconds, doubled for each quick exit in a row, at most ``cap``."""

    first: float = 1.0
    cap: float = 30.0
    stable_after: float = 30.0

    def delay(self, quick_exits: int) -> float:
        return float(min(self.cap, self.first * 2 ** max(0, quick_exits - 1)))


@dataclass
class _Running:
    program: Program
    popen: subprocess.Popen[bytes]
    started: float
    ready: bool = False


@dataclass
class _State:
    """What the supervisor knows of a program between its runs."""

    program: Program
    running: _Running | None = None
    quick_exits: int = 0  # exits in a row that came before `stable_after`
    ever_ready: bool = False
    restart_at: float | None = None
    exit_code: int | None = None  # of the last run
    stopping: bool = False  # asked to stop: its exit is no reason to restart it
    restarts: int = 0
    last_lines: list[str] = field(default_factory=list)


class Supervisor:
    def __init__(
        self,
        *,
        out: IO[str] | None = None,
        backoff: Backoff | None = None,
        max_startup_failures: int = 3,
        color: bool | None = None,
    ) -> None:
        self.out = out or sys.stdout
        self.backoff = backoff or Backoff()
        self.max_startup_failures = max_startup_failures
        self.color = self.out.isatty() if color is None else color
        self.states: dict[str, _State] = {}
        self.stop_requested: int | None = None  # the signal that asked for the stop
        self.hurry = False  # a second signal: kill instead of waiting
        self._selector = selectors.DefaultSelector()
        self._wakeup_r, self._wakeup_w = os.pipe()
        for fd in (self._wakeup_r, self._wakeup_w):
            os.set_blocking(fd, False)
        self._selector.register(self._wakeup_r, selectors.EVENT_READ, None)
        self._width = 8
        self._partial: dict[int, bytes] = {}
        self._closed = False
        self._old_handlers: dict[int, object] = {}
        self._old_wakeup = -1

    # --- signals --------------------------------------------------------------------------------

    def install_signal_handlers(self) -> None:
        """SIGINT/SIGTERM ask for a stop (a second one: hurry); SIGCHLD wakes the loop."""
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            self._old_handlers[signum] = signal.signal(signum, self._on_signal)
        self._old_wakeup = signal.set_wakeup_fd(self._wakeup_w, warn_on_full_buffer=False)

    def restore_signal_handlers(self) -> None:
        for signum, handler in self._old_handlers.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        signal.set_wakeup_fd(self._old_wakeup)
        self._old_handlers.clear()

    def _on_signal(self, signum: int, frame: object) -> None:
        if signum == signal.SIGCHLD:
            return
        if self.stop_requested is None:
            self.stop_requested = signum
        else:
            self.hurry = True

    def request_stop(self, signum: int = signal.SIGTERM) -> None:
        self._on_signal(signum, None)
        self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._wakeup_w, b"\0")
        except BlockingIOError:
            pass

    # --- output ---------------------------------------------------------------------------------

    def say(self, message: str) -> None:
        """A line of the supervisor's own."""
        self._emit("bin/run", message.encode(), bold=True)

    def _emit(self, name: str, line: bytes, *, bold: bool = False) -> None:
        text = line.decode("utf-8", "replace").rstrip("\r")
        prefix = f"{name:<{self._width}} | "
        if self.color:
            prefix = f"\033[{'1' if bold else '2'}m{prefix}\033[0m"
            if bold:
                text = f"\033[1m{text}\033[0m"
        self.out.write(prefix + text + "\n")

    def write(self, text: str) -> None:
        """Text of the supervisor's own, as it is (the first screen's box)."""
        self.out.write(text)
        self.out.flush()

    def _read(self, state: _State, running: _Running, fd: int) -> None:
        """Output of one run of a program (its pipe stays open while anything of its group writes)."""
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        partial = self._partial.pop(fd, b"")
        if not chunk:
            self._selector.unregister(fd)
            os.close(fd)
            if partial:
                self._line(state, running, partial)
            self.out.flush()
            return
        lines = (partial + chunk).split(b"\n")
        rest = lines.pop()
        if rest:
            self._partial[fd] = rest
        for line in lines:
            self._line(state, running, line)
        self.out.flush()

    def _line(self, state: _State, running: _Running, line: bytes) -> None:
        self._emit(state.program.name, line)
        text = line.decode("utf-8", "replace")
        state.last_lines = [*state.last_lines[-19:], text]
        pattern = state.program.ready_line
        if running is state.running and not running.ready and pattern and re.search(pattern, text):
            self._mark_ready(state)

    def _mark_ready(self, state: _State) -> None:
        assert state.running is not None
        state.running.ready = True
        state.ever_ready = True

    # --- starting and watching ------------------------------------------------------------------

    def start(self, program: Program) -> None:
        """Start ``program`` now (it must not be running)."""
        state = self.states.get(program.name)
        if state is None:
            state = self.states[program.name] = _State(program)
        assert state.running is None, f"{program.name} is running already"
        self._width = max(self._width, len(program.name))
        popen = subprocess.Popen(
            program.argv,
            env=program.env,
            cwd=program.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=child_setup(program.user, program.stop_signal),  # noqa: PLW1509 - no threads here
        )
        assert popen.stdout is not None
        fd = os.dup(popen.stdout.fileno())  # read (and closed) by the loop, not through Popen's file
        popen.stdout.close()
        popen.stdout = None
        os.set_blocking(fd, False)
        state.running = _Running(program, popen, time.monotonic())
        state.restart_at = None
        state.stopping = False
        self._selector.register(fd, selectors.EVENT_READ, (state, state.running))
        if program.ready_line is None and program.ready_check is None:
            self._mark_ready(state)

    def is_ready(self, name: str) -> bool:
        state = self.states.get(name)
        return state is not None and state.running is not None and state.running.ready

    def exited(self, name: str) -> int | None:
        """The exit status of a program that is not running (None while it runs or will restart)."""
        state = self.states[name]
        if state.running is not None or state.restart_at is not None:
            return None
        return state.exit_code

    def pid(self, name: str) -> int | None:
        state = self.states.get(name)
        return state.running.popen.pid if state and state.running else None

    def restarts(self, name: str) -> int:
        return self.states[name].restarts

    def last_lines(self, name: str) -> list[str]:
        return list(self.states[name].last_lines)

    def run_until(self, done: Callable[[], bool], timeout: float | None = None) -> bool:
        """Watch the programs (output, exits, restarts, readiness) until ``done()`` is true (True), a
        stop is requested or ``timeout`` passes (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._step()
            if done():
                return True
            if self.stop_requested is not None:
                return False
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self._wait(deadline)

    def serve(self) -> None:
        """Watch the programs until a stop is requested."""
        self.run_until(lambda: False)

    def _wait(self, deadline: float | None) -> None:
        now = time.monotonic()
        wait = 1.0
        for state in self.states.values():
            if state.restart_at is not None:
                wait = min(wait, max(0.0, state.restart_at - now))
            if state.running is not None and not state.running.ready and state.program.ready_check:
                wait = min(wait, 0.2)
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - now))
        for key, _events in self._selector.select(wait):
            if key.data is None:
                try:
                    while os.read(self._wakeup_r, 512):
                        pass
                except BlockingIOError:
                    pass
            else:
                state, running = key.data
                self._read(state, running, key.fd)

    def _step(self) -> None:
        now = time.monotonic()
        for state in self.states.values():
            running = state.running
            if running is not None:
                code = running.popen.poll()
                if code is not None:
                    self._exited(state, code, now)
                elif not running.ready and state.program.ready_check is not None:
                    try:
                        ok = state.program.ready_check()
                    except Exception:
                        ok = False
                    if ok:
                        self._mark_ready(state)
            elif state.restart_at is not None and now >= state.restart_at and self.stop_requested is None:
                state.restarts += 1
                self.say(f"restarting {state.program.name} (restart {state.restarts})")
                self.start(state.program)

    def _exited(self, state: _State, code: int, now: float) -> None:
        running = state.running
        assert running is not None
        self._drain(running)
        kill_group(running.popen.pid)  # what it left behind: pool children, a stuck worker
        state.running = None
        state.exit_code = code
        ran = now - running.started
        if self.stop_requested is not None or state.stopping or not state.program.restart:
            return
        state.quick_exits = 0 if ran >= self.backoff.stable_after else state.quick_exits + 1
        if not state.ever_ready and state.quick_exits >= self.max_startup_failures:
            raise StartupFailed(
                f"{state.program.name} exited {state.quick_exits} times before it was ready"
                f" (last: {describe_exit(code)})"
            )
        delay = self.backoff.delay(state.quick_exits)
        self.say(
            f"{state.program.name} exited unexpectedly ({describe_exit(code)}) after {duration(ran)};"
            f" restarting in {delay:g}s"
        )
        state.restart_at = now + delay

    def _drain(self, running: _Running) -> None:
        """Read what the exited program still had in its pipe."""
        for key in list(self._selector.get_map().values()):
            if key.data is not None and key.data[1] is running:
                self._read(key.data[0], running, key.fd)

    # --- stopping -------------------------------------------------------------------------------

    def stop(self, names: Iterable[str], grace: float) -> None:
        """Send each named running program its stop signal, wait up to ``grace`` seconds (those that
        may be killed stop waiting at a second Ctrl-C), then SIGKILL what is left of their groups."""
        targets = [self.states[n] for n in names if n in self.states]
        for state in targets:
            state.restart_at = None
            state.stopping = True
            if state.running is not None:
                send_signal(state.running.popen.pid, state.program.stop_signal)
        sent = {state.program.name: time.monotonic() for state in targets}
        deadline = time.monotonic() + grace

        def waiting() -> list[_State]:
            return [s for s in targets if s.running is not None and not (self.hurry and s.program.kill_when_hurried)]

        while waiting() and time.monotonic() < deadline:
            self._wait(min(deadline, time.monotonic() + 0.5))
            self._step()
            for state in targets:
                every = state.program.resend_stop_every
                if (
                    state.running is not None
                    and every is not None
                    and time.monotonic() - sent[state.program.name] >= every
                ):
                    send_signal(state.running.popen.pid, state.program.stop_signal)
                    sent[state.program.name] = time.monotonic()
        for state in targets:
            if state.running is not None:
                if not self.hurry:
                    self.say(f"{state.program.name} did not stop within {grace:g}s: killing it")
                kill_group(state.running.popen.pid)
                try:
                    state.running.popen.wait(5)
                except subprocess.TimeoutExpired:
                    pass
                self._step()
            state.running = None  # (what a kill could not end: a process in uninterruptible sleep)

    def close(self) -> None:
        """Kill every process group still there (a failure path) and release the pipes."""
        if self._closed:
            return
        self._closed = True
        for state in self.states.values():
            if state.running is not None:
                kill_group(state.running.popen.pid)
                try:
                    state.running.popen.wait(5)
                except subprocess.TimeoutExpired:
                    pass
                self._drain(state.running)
                state.running = None
        for key in list(self._selector.get_map().values()):
            if key.data is not None:
                self._selector.unregister(key.fd)
                os.close(key.fd)
        self._partial.clear()
        self._selector.close()
        os.close(self._wakeup_r)
        os.close(self._wakeup_w)
        self.out.flush()

"""The supervisor's children, one by one: how each is started (its user, its death signal), signalled
and killed with its process group, and how an exit reads."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import pwd
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def send_signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_libc: ctypes.CDLL | None = None
if sys.platform == "linux":
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def child_setup(user: str | None, death_signal: int) -> Callable[[], None]:
    """The child's last steps before exec: become ``user`` (when given and we are root), then ask the
    kernel for ``death_signal`` should the supervisor die (set last: a change of user clears it)."""
    account = pwd.getpwnam(user) if user and os.geteuid() == 0 else None
    parent = os.getpid()

    def setup() -> None:
        if account is not None:
            os.setgroups([])
            os.setgid(account.pw_gid)
            os.setuid(account.pw_uid)
        if _libc is not None:
            if _libc.prctl(_PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
            if os.getppid() != parent:  # the supervisor died before the request took
                os._exit(1)

    return setup

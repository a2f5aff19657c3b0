"""The supervisor (runner/supervisor.py) with real processes: restarts with a backoff, start-up
failures, stops that escalate to the whole process group, signals, and children that die with it."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from runner.supervisor import Backoff, Program, StartupFailed, Supervisor, describe_exit

SLEEPER = "import time; print('up', flush=True); time.sleep(600)"


def python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether process ``pid`` (reaped or a zombie) has ended within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def sup():
    supervisor = Supervisor(out=io.StringIO(), backoff=Backoff(first=0.05, cap=0.4, stable_after=60))
    yield supervisor
    supervisor.close()


def test_a_killed_program_is_logged_and_restarted_the_others_stay_up(sup):
    sup.start(Program("sleeper", python(SLEEPER), ready_line="^up$"))
    sup.start(Program("other", python(SLEEPER), ready_line="^up$"))
    assert sup.run_until(lambda: sup.is_ready("sleeper") and sup.is_ready("other"), 30)
    first, other = sup.pid("sleeper"), sup.pid("other")
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert sup.run_until(lambda: sup.restarts("sleeper") == 1 and sup.is_ready("sleeper"), 30)
    assert sup.pid("sleeper") not in (None, first) and sup.pid("other") == other
    log = sup.out.getvalue()
    assert "sleeper exited unexpectedly (killed by SIGKILL)" in log and "restarting in 0.05s" in log
    assert "restarting sleeper (restart 1)" in log
    sup.stop(["sleeper", "other"], 10)
    assert sup.pid("sleeper") is None and sup.pid("other") is None


def test_quick_exits_in_a_row_double_the_wait_up_to_the_cap(sup):
    # Ready, then it exits at once: every exit is a quick one (stable_after is 60 s).
    sup.start(Program("flaky", python("print('up', flush=True); raise SystemExit(3)"), ready_line="^up$"))
    assert sup.run_until(lambda: sup.restarts("flaky") >= 5, 60)
    sup.stop(["flaky"], 5)
    waits = [line.split("restarting in ")[1] for line in sup.out.getvalue().splitlines() if "restarting in" in line]
    assert waits[:5] == ["0.05s", "0.1s", "0.2s", "0.4s", "0.4s"]
    assert "flaky exited unexpectedly (exit status 3)" in sup.out.getvalue()


def test_a_run_that_lasted_resets_the_backoff():
    backoff = Backoff(first=1, cap=30, stable_after=30)
    assert [backoff.delay(n) for n in (0, 1, 2, 3, 4, 5, 6, 9)] == [1, 1, 2, 4, 8, 16, 30, 30]


def test_a_program_that_never_gets_ready_stops_the_start_with_its_reason(sup):
    sup.start(Program("broken", python("print('no config', flush=True); raise SystemExit(2)"), ready_line="^up$"))
    with pytest.raises(StartupFailed, match=r"broken exited 3 times before it was ready \(last: exit status 2\)"):
        sup.run_until(lambda: False, 60)
    assert sup.last_lines("broken")[-1] == "no config"


def test_a_one_shot_program_ends_with_its_status_and_is_not_restarted(sup):
    sup.start(Program("setup", python("print('migrated')"), restart=False))
    assert sup.run_until(lambda: sup.exited("setup") is not None, 30)
    assert sup.exited("setup") == 0 and sup.restarts("setup") == 0
    assert "setup    | migrated" in sup.out.getvalue()


def test_output_is_prefixed_line_by_line_even_without_a_last_newline(sup):
    code = "import sys; print('one', flush=True); print('err', file=sys.stderr, flush=True); sys.stdout.write('two')"
    sup.start(Program("talker", python(code), restart=False))
    assert sup.run_until(lambda: sup.exited("talker") is not None, 30)
    sup.close()
    assert sup.out.getvalue().splitlines() == ["talker   | one", "talker   | err", "talker   | two"]


def test_stop_uses_each_programs_own_signal(sup):
    code = """
        import signal, sys, time
        def bye(signum, frame):
            print('stopping on', signal.Signals(signum).name, flush=True)
            sys.exit(0)
        signal.signal(signal.SIGINT, bye)
        print('up', flush=True)
        time.sleep(600)
    """
    sup.start(Program("server", python(code), stop_signal=signal.SIGINT, ready_line="^up$"))
    assert sup.run_until(lambda: sup.is_ready("server"), 30)
    sup.stop(["server"], 10)
    assert "server   | stopping on SIGINT" in sup.out.getvalue()
    assert sup.exited("server") == 0 and sup.restarts("server") == 0


def test_a_program_that_ignores_its_stop_signal_is_killed_with_its_whole_group(sup, tmp_path):
    pidfile = tmp_path / "grandchild"
    code = f"""
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        print('up', flush=True)
        time.sleep(600)
    """
    sup.start(Program("stubborn", python(code), ready_line="^up$"))
    assert sup.run_until(lambda: sup.is_ready("stubborn"), 30)
    leader = sup.pid("stubborn")
    assert leader is not None
    grandchild = int(pidfile.read_text())
    started = time.monotonic()
    sup.stop(["stubborn"], 0.5)
    assert time.monotonic() - started < 10
    assert gone(leader) and gone(grandchild)
    assert "stubborn did not stop within 0.5s: killing it" in sup.out.getvalue()


def test_a_program_that_swallows_its_stop_signal_is_asked_again(sup):
    code = """
        import signal, sys, time
        seen = []
        def once(signum, frame):
            seen.append(signum)
            if len(seen) > 1:
                print('stopping on the second', flush=True)
                sys.exit(0)
        signal.signal(signal.SIGTERM, once)
        print('up', flush=True)
        while True:
            time.sleep(600)
    """
    sup.start(Program("beatlike", python(code), ready_line="^up$", resend_stop_every=0.2))
    assert sup.run_until(lambda: sup.is_ready("beatlike"), 30)
    sup.stop(["beatlike"], 60)
    assert "beatlike | stopping on the second" in sup.out.getvalue()
    assert sup.exited("beatlike") == 0 and "did not stop" not in sup.out.getvalue()


def test_ctrl_c_asks_for_a_stop_and_a_second_one_hurries(sup):
    sup.start(Program("sleeper", python(SLEEPER), ready_line="^up$"))
    before = signal.getsignal(signal.SIGINT)
    sup.install_signal_handlers()
    try:
        assert sup.run_until(lambda: sup.is_ready("sleeper"), 30)
        os.kill(os.getpid(), signal.SIGINT)
        assert sup.run_until(lambda: False, 30) is False  # returns on the signal, not at the timeout
        assert sup.stop_requested == signal.SIGINT and not sup.hurry
        os.kill(os.getpid(), signal.SIGTERM)
        assert sup.hurry
        started = time.monotonic()
        sup.stop(["sleeper"], 60)  # hurried: killed at once, not after 60 s
        assert time.monotonic() - started < 10
    finally:
        sup.restore_signal_handlers()
    assert signal.getsignal(signal.SIGINT) == before


def test_the_programs_die_with_the_supervisor_even_by_sigkill(tmp_path):
    script = f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from runner.supervisor import Program, Supervisor
        sup = Supervisor()
        sup.start(Program("sleeper", [sys.executable, "-c", {SLEEPER!r}], ready_line="^up$"))
        sup.run_until(lambda: sup.is_ready("sleeper"), 30)
        print("child", sup.pid("sleeper"), flush=True)
        sup.serve()
    """
    proc = subprocess.Popen(python(script), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = next(line for line in proc.stdout if line.startswith("child "))
        child = int(line.split()[1])
        assert not gone(child, 0.1)
        proc.kill()
        assert gone(child), "the program outlived its supervisor"
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can run a program as another user")
def test_a_program_runs_as_its_user_when_the_supervisor_is_root(sup):
    sup.start(Program("nobody", ["sleep", "600"], user="nobody"))  # (our python is under /root)
    status = Path(f"/proc/{sup.pid('nobody')}/status").read_text()
    uid = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1]
    import pwd

    assert int(uid) == pwd.getpwnam("nobody").pw_uid
    sup.stop(["nobody"], 10)


def test_exits_are_described_for_people():
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(1) == "exit status 1"

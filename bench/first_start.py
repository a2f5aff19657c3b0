#!/usr/bin/env python3
"""How long a newcomer waits: a fresh clone, `./bin/run` with nothing set (the venv made and
requirements.txt installed by it, from pip's cache when warm), until `/readyz` answers and until the
first screen's box is printed; then Ctrl-C (SIGINT to its process group) until nothing of it runs;
then `./bin/run` again (restart) until `/readyz` answers and the box. Prints the figures, the load
average around each and the CPU time the run's processes used until the box (user + system, the
exited ones included): on a shared machine the wall time follows the load, the CPU time does not
(the README's table). Standard library only.

    python3 bench/first_start.py [--restarts 3] [--keep] [--nice -15]

On a shared machine, ``--nice -15`` (root) runs bin/run and everything it starts ahead of the other
work: the closest to an idle machine there is without stopping the others.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "TRACERELAY_DATA_DIR")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def cpu_seconds(repo: Path, leader: int) -> float:
    """CPU time of the run so far: every live process of it, and the children bin/run reaped."""
    tick = os.sysconf("SC_CLK_TCK")
    needle = os.fsencode(str(repo))
    total = 0
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit():
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            mine = int(fields[2]) == leader or needle in (entry / "environ").read_bytes()
            mine = mine or needle in (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if mine:  # utime, stime, and for bin/run itself its reaped children's (cutime, cstime)
            total += int(fields[11]) + int(fields[12])
            if int(entry.name) == leader:
                total += int(fields[13]) + int(fields[14])
    return total / tick


def start(repo: Path, port: int, log: Path, nice: int = 0) -> tuple[subprocess.Popen[bytes], float, float, float]:
    """bin/run started; (process, seconds to /readyz, seconds to the box, CPU seconds until the box)."""
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES} | {"PORT": str(port)}
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["./bin/run"],
            cwd=repo,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=(lambda: os.nice(nice)) if nice else None,
        )
    healthy = boxed = cpu = 0.0
    while not (healthy and boxed):
        if proc.poll() is not None:
            sys.exit(f"bin/run exited ({proc.returncode}); see {log}")
        if time.monotonic() - started > 900:
            sys.exit(f"bin/run not up after 900 s; see {log}")
        if not healthy and ready(port):
            healthy = time.monotonic() - started
        if not boxed and "tracerelay is running" in log.read_text(errors="replace"):
            boxed = time.monotonic() - started
            cpu = cpu_seconds(repo, proc.pid)
        time.sleep(0.05)
    return proc, healthy, boxed, cpu


def stop(proc: subprocess.Popen[bytes], repo: Path) -> float:
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(120)
    needle = os.fsencode(str(repo))
    while True:
        left = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and (needle in (entry / "cmdline").read_bytes()
                                             or needle in (entry / "environ").read_bytes()):  # fmt: skip
                    left.append(entry.name)
            except OSError:
                pass
        if not left:
            return time.monotonic() - started
        if time.monotonic() - started > 60:
            sys.exit(f"processes left a minute after Ctrl-C: {left}")
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the clone (and its logs)")
    parser.add_argument("--nice", type=int, default=0, help="bin/run's niceness (negative: ahead of the rest)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tracerelay-first-start-"))
    repo = tmp / "fresh"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(repo)], check=True)
    port = free_port()
    print(f"fresh clone of {ROOT} (HEAD) in {repo}; load average {load()} ({os.cpu_count()} cores); nice {args.nice}")
    try:
        before = load()
        proc, healthy, boxed, cpu = start(repo, port, tmp / "first.log", args.nice)
        print(f"first start (venv, install, initdb, migrations): /readyz {healthy:.1f}s, box {boxed:.1f}s,"
              f" {cpu:.1f} CPU-s of the run, pip included  [load {before} → {load()}]")  # fmt: skip
        for i in range(args.restarts):
            stopped = stop(proc, repo)
            print(f"Ctrl-C: nothing of it left after {stopped:.1f}s")
            before = load()
            proc, healthy, boxed, cpu = start(repo, port, tmp / f"restart-{i}.log", args.nice)
            print(f"restart {i + 1}: /readyz {healthy:.1f}s, box {boxed:.1f}s, {cpu:.1f} CPU-s"
                  f"  [load {before} → {load()}]")  # fmt: skip
        stopped = stop(proc, repo)
        print(f"Ctrl-C: nothing of it left after {stopped:.1f}s")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

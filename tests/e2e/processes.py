"""Real processes for end-to-end tests: a Redis of our own, a Celery worker (with beat), Phoenix and
MLflow servers. Each starts in its own session so it can be stopped whole (MLflow and Celery fork
children), on a free loopback port, with its log in a file the test can show on failure.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
PHOENIX_BIN = ROOT / ".venv-phoenix" / "bin" / "phoenix"
MLFLOW_BIN = ROOT / ".venv-mlflow" / "bin" / "mlflow"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Process:
    """A subprocess in its own process group, logging to ``log_path``."""

    def __init__(self, name: str, argv: list[str], *, env: Mapping[str, str] | None = None, workdir: Path) -> None:
        self.name = name
        self.argv = argv
        self.env = {**os.environ, **(env or {})}
        self.workdir = workdir
        self.log_path = workdir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            self.argv, env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole group (the process and every child it forked)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.running:
            self.kill(signal.SIGTERM)
        elif self.proc is not None:
            try:  # children may outlive a dead parent
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def wait_http(self, url: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running:
                raise RuntimeError(f"{self.name} exited early:\n{self.log_tail()}")
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} not ready after {timeout:g}s:\n{self.log_tail()}")

    def wait_log(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_path.read_text(errors="replace"):
                return
            if not self.running:
                raise RuntimeError(f"{self.name} exited early:\n{self.log_tail()}")
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: no {text!r} after {timeout:g}s:\n{self.log_tail()}")


class RedisServer(Process):
    """A throwaway redis-server (no persistence) that a test may stop and start again on its port."""

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        super().__init__(f"redis-{self.port}", argv, workdir=workdir)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        super().start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server on {self.port} did not start:\n{self.log_tail()}")


class CeleryWorker(Process):
    """``celery worker -Q delivery -B``: one prefork child, beat embedded (the outbox sweeper); other
    ``queues`` on request."""

    def __init__(
        self, workdir: Path, env: Mapping[str, str], *, concurrency: int = 1, queues: str = "delivery"
    ) -> None:
        argv = [
            str(VENV_BIN / "celery"),
            "-A",
            "config",
            "worker",
            "-Q",
            queues,
            "-c",
            str(concurrency),
            "-B",
            "-s",
            str(workdir / f"beat-{uuid.uuid4().hex[:8]}"),
            "-n",
            f"e2e-{uuid.uuid4().hex[:8]}@%h",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
        ]
        super().__init__(f"worker-{uuid.uuid4().hex[:6]}", argv, env=env, workdir=workdir)

    def start(self) -> CeleryWorker:
        super().start()
        self.wait_log(" ready.", timeout=180)  # a generous deadline: a loaded machine starts it slowly
        return self


class PhoenixServer(Process):
    def __init__(self, workdir: Path) -> None:
        self.port, grpc = free_port(), free_port()
        env = {
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(grpc),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_WORKING_DIR": str(workdir / "phoenix"),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        super().__init__("phoenix", [str(PHOENIX_BIN), "serve"], env=env, workdir=workdir)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self) -> None:
        self.wait_http(f"{self.url}/healthz", timeout=150)


class MlflowServer(Process):
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        store = workdir / "mlflow"
        store.mkdir(parents=True, exist_ok=True)
        argv = [
            str(MLFLOW_BIN),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--backend-store-uri",
            f"sqlite:///{store / 'mlflow.db'}",
            "--default-artifact-root",
            str(store / "artifacts"),
            "--workers",
            "1",
        ]
        super().__init__(
            "mlflow", argv, env={"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}, workdir=workdir
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self) -> None:
        self.wait_http(f"{self.url}/health", timeout=150)

"""How long an app using the Python SDK takes to exit when tracerelay is down: before (a git ref) and after (this tree).

    .venv/bin/python bench/sdk_exit.py [--before main] [--rounds 3] [--calls 1 4] [--cases refused black-hole]

The app is a short script in its own interpreter: the real `openai` package calling a loopback
stand-in for OpenAI a few times and printing each reply, with the SDK added by its two lines and its
defaults (`tracerelay.init()`). tracerelay's address is, per case:

- refused: a closed port (the connection is refused at once);
- black-hole: a listener that accepts connections and never answers;
- unknown-host: `tracerelay.invalid`, a name that never resolves (RFC 6761);
- 503: a server answering every request 503 with `Retry-After: 30`.

What is timed is what a user waits for: from the app's last line of output to the end of its process,
read by this script as the output comes. The same app without the SDK ("plain") gives the
interpreter's own exit time at that moment. The SDK "before" is `sdk/python/src` of the git ref
(extracted with `git archive`), "after" is this tree's; each round runs plain, before and after
one after the other for every case, so the load of a shared machine falls on all of them alike.
Medians of the rounds; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASES = ("refused", "black-hole", "unknown-host", "503")
APP = """
import sys
if sys.argv[2] == "sdk":
    import tracerelay
    tracerelay.init(service_name="bench-exit")
from openai import OpenAI

client = OpenAI(max_retries=0)
for _ in range(int(sys.argv[1])):
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    print(reply.choices[0].message.content, flush=True)
"""
CHAT = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
}


def _serve(answer: tuple[int, dict[str, str], bytes]) -> ThreadingHTTPServer:
    """A loopback HTTP server giving every POST and PUT the same answer."""
    status, headers, body = answer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            for name, value in {**headers, "Content-Type": "application/json"}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_PUT = do_POST

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@contextmanager
def tracerelay_down(case: str) -> Iterator[str]:
    """tracerelay's URL for the case, its server running for the duration."""
    if case == "refused":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    elif case == "black-hole":
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)  # connections complete in the backlog; nothing is ever read or answered
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}"
        finally:
            listener.close()
    elif case == "unknown-host":
        yield "http://tracerelay.invalid:8000"
    else:
        server = _serve((503, {"Retry-After": "30"}, b'{"title": "Service Unavailable"}'))
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()


def exit_seconds(app: Path, calls: int, variant: str, sdk_src: Path | None, env: dict[str, str]) -> float:
    """Run the app; seconds from its last line of output to its end."""
    if sdk_src is not None:
        env = {**env, "PYTHONPATH": str(sdk_src)}
    mode = "plain" if variant == "plain" else "sdk"
    proc = subprocess.Popen(
        [sys.executable, str(app), str(calls), mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    last, lines = time.monotonic(), 0
    assert proc.stdout is not None
    for _ in proc.stdout:
        last, lines = time.monotonic(), lines + 1
    code = proc.wait(timeout=120)
    ended = time.monotonic()
    if code != 0 or lines != calls:
        raise SystemExit(f"the app failed ({variant}, {calls} calls): exit {code}, {lines} lines")
    return ended - last


def extract_sdk(ref: str, into: Path) -> Path:
    """`sdk/python/src` as it is at git ref `ref`."""
    archive = into / "before.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", ref, "sdk/python/src"], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "sdk" / "python" / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="main", help="git ref of the SDK to compare with (default main)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=["refused", "black-hole"])
    args = parser.parse_args()

    upstream = _serve((200, {}, json.dumps(CHAT).encode()))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        app = work / "app.py"
        app.write_text(APP)
        variants = {"plain": None, "before": extract_sdk(args.before, work), "after": ROOT / "sdk" / "python" / "src"}
        base_env = {
            **os.environ,
            "OPENAI_BASE_URL": f"http://127.0.0.1:{upstream.server_address[1]}/v1",
            "OPENAI_API_KEY": "sk-bench",
            "TRACERELAY_API_KEY": "tr_dev_bench",
        }
        base_env.pop("PYTHONPATH", None)
        print(f"load average before: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)", flush=True)
        times: dict[tuple[str, int, str], list[float]] = {}
        for round_ in range(args.rounds):
            for case in args.cases:
                for calls in args.calls:
                    with tracerelay_down(case) as url:
                        env = {**base_env, "TRACERELAY_BASE_URL": url}
                        for variant, src in variants.items():
                            seconds = exit_seconds(app, calls, variant, src, env)
                            times.setdefault((case, calls, variant), []).append(seconds)
            print(f"round {round_ + 1}/{args.rounds} done", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    upstream.shutdown()

    print(f"\nexit after the last line of output, median of {args.rounds} rounds (seconds)")
    print(f"{'tracerelay':<14}{'calls':>6}{'plain':>9}{f'before ({args.before})':>18}{'after':>9}")
    for case in args.cases:
        for calls in args.calls:
            plain, before, after = (statistics.median(times[(case, calls, v)]) for v in ("plain", "before", "after"))
            print(f"{case:<14}{calls:>6}{plain:>9.2f}{before:>18.2f}{after:>9.2f}")


if __name__ == "__main__":
    main()

"""Browser tests: the real dashboard (config.asgi under uvicorn, in a thread of this process) driven
by Playwright in the system's headless Chromium (/usr/bin/chromium, installed by bin/test).

Fixtures for any page test:
- ``live``: the server's base URL, over a committed (transactional) test database;
- ``page``: a fresh browser context and page at 1280×900, its base URL set to ``live``;
- ``sign_in(page, user)``: a signed-in session without going through the log-in form;
- ``shoot(page, name)``: full-page screenshots at 1280 px and 390 px in tests/browser/screenshots/;
- ``smtp``: a real SMTP server on loopback (aiosmtpd) that the dashboard's mail goes to.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from django.conf import settings
from django.test import Client

from ..fakes.smtp import Mailbox, smtp_server, use_smtp

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).parent / "screenshots"
WIDE, NARROW = (1280, 900), (390, 844)

pytestmark = pytest.mark.browser


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


def _free_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


@pytest.fixture(scope="session")
def live_server_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    import config.asgi

    sock = _free_socket()
    port = sock.getsockname()[1]
    # No lifespan: it would start (and at exit stop) config.asgi's one ProxyApp, which the proxy
    # tests' own server in this process starts with their settings. The dashboard, the API and
    # the lean ingest path need no startup.
    server = uvicorn.Server(
        uvicorn.Config(config.asgi.application, lifespan="off", log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="dashboard-under-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the dashboard server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(15)
    # The server's threads held connections to the test database (pooled, or thread-local in
    # asgiref's executor threads, which outlive the server): end them so it can be dropped.
    from django.db import connection, connections

    for each in connections.all():
        if hasattr(each, "close_pool"):
            each.close_pool()
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    connection.close()


@pytest.fixture
def live(live_server_url: str, transactional_db: None) -> str:
    return live_server_url


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One browser per test module. Not per session: while Playwright's sync API is running, this
    thread has an event loop, and the tests of other modules (run by the same xdist worker in
    between) must not find one."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: ./bin/test installs Debian's chromium package")
    from playwright.sync_api import sync_playwright

    # That loop also makes Django refuse ORM calls from this thread; the tests' own ORM calls are
    # synchronous and safe here, which Django cannot tell. Allowed only while the browser is up.
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            yield browser
            browser.close()
    finally:
        if before is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture
def new_page(chromium: Any, live: str) -> Iterator[Callable[[], Any]]:
    """``new_page()`` → another page in a context of its own (a second person, say)."""
    contexts = []

    def make() -> Any:
        context = chromium.new_context(
            base_url=live, viewport={"width": WIDE[0], "height": WIDE[1]}, locale="en-GB", timezone_id="Europe/Paris"
        )
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live)
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        return page

    errors: list[str] = []
    yield make
    for context in contexts:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def page(new_page: Callable[[], Any]) -> Any:
    return new_page()


@pytest.fixture
def sign_in(live: str) -> Callable[[Any, Any], None]:
    """Put a signed-in session for ``user`` in the page's browser context (and open ``/``)."""

    def go(page: Any, user: Any) -> None:
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME]
        page.context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": live}])
        page.goto("/")

    return go


@pytest.fixture
def shoot() -> Callable[[Any, str], None]:
    """Save what the page looks like, wide and narrow: screenshots/<name>-1280.png and -390.png."""
    SCREENSHOTS.mkdir(exist_ok=True)

    def take(page: Any, name: str) -> None:
        size = page.viewport_size
        for width, height in (WIDE, NARROW):
            page.set_viewport_size({"width": width, "height": height})
            page.evaluate("window.scrollTo(0, 0)")  # the side bar is fixed: drawn where the page is scrolled to
            page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=True, animations="disabled")
            # Usable at this width: nothing makes the page scroll sideways (wide tables scroll in their box).
            wider = page.evaluate(_WIDER_THAN_VIEWPORT)
            assert not wider, f"{name} at {width} px: these stick out of the page: {wider}"
        page.set_viewport_size(size)

    return take


_WIDER_THAN_VIEWPORT = """() => {
    if (document.documentElement.scrollWidth <= window.innerWidth) return [];  // wide tables scroll in their box
    return [...document.querySelectorAll("body *")]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
        .slice(0, 8)
        .map((e) => `${e.tagName.toLowerCase()}.${e.className} (${Math.round(e.getBoundingClientRect().right)} px)`);
}"""


# --- A real SMTP server on loopback -------------------------------------------------------------


@pytest.fixture
def smtp(settings: Any) -> Iterator[Mailbox]:
    with smtp_server() as mailbox:
        use_smtp(settings, mailbox)
        yield mailbox

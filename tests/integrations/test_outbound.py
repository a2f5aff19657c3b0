"""The exporters' HTTP transport connects only to addresses the URL guard checked, resolved where
the connection is made (`integrations.outbound`). DNS answers are scripted by patching the guard's
one resolving function, `urlguard.resolve_addresses`."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.test import override_settings

from integrations import urlguard
from integrations.outbound import guarded_transport
from integrations.urlguard import UnsafeDestination, check_url
from tests.fakes.server import FakeServer

LOOPBACK = ipaddress.ip_address("127.0.0.1")


class Dns:
    """Scripted answers of `urlguard.resolve_addresses`: the next answer per call (the last one
    repeats), and the names asked for."""

    def __init__(self, *answers: str) -> None:
        self.answers = [ipaddress.ip_address(a) for a in answers]
        self.asked: list[str] = []

    def __call__(self, host: str) -> list:
        self.asked.append(host)
        return [self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]]


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(transport=guarded_transport(limits=httpx.Limits())) as client:
        yield client


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


def test_a_name_is_connected_to_the_address_the_guard_resolved(monkeypatch, client, server) -> None:
    dns = Dns("127.0.0.1")
    monkeypatch.setattr(urlguard, "resolve_addresses", dns)
    url = f"http://dest.example.test:{server.port}/v1/traces"  # a name no real DNS knows

    check_url(url)  # the send-time check, then the connection: one look-up for both
    response = client.post(url, content=b"{}")

    assert response.status_code == 200
    assert server.requests[0].header("host") == f"dest.example.test:{server.port}"
    assert dns.asked == ["dest.example.test"]


@pytest.mark.parametrize("rebound", ["169.254.169.254", "fe80::1", "::ffff:169.254.169.254"])
def test_a_name_rebound_after_its_check_is_refused_where_it_connects(monkeypatch, client, server, rebound) -> None:
    # The check sees a loopback answer; by the time the connection is opened, the name answers
    # with a metadata / link-local address (the cached answer expired in between).
    monkeypatch.setattr(urlguard, "ADDRESS_TTL_S", 0.0)
    monkeypatch.setattr(urlguard, "resolve_addresses", Dns("127.0.0.1", rebound))
    url = f"http://rebind.example.test:{server.port}/hook"

    check_url(url)
    with pytest.raises(UnsafeDestination, match="rebind.example.test resolves to .*(link-local|metadata)"):
        client.post(url, content=b"{}")

    assert server.requests == []


def test_a_private_address_is_allowed_by_default_and_refused_when_the_setting_closes_it(
    monkeypatch, client, server
) -> None:
    monkeypatch.setattr(urlguard, "resolve_addresses", Dns("127.0.0.1"))

    assert client.get(f"http://vllm.internal.test:{server.port}/v1/models").status_code == 200
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=False):
        with httpx.Client(transport=guarded_transport(limits=httpx.Limits())) as fresh:
            for url in (f"http://ollama.internal.test:{server.port}/", f"http://127.0.0.1:{server.port}/"):
                with pytest.raises(UnsafeDestination, match="private, loopback or reserved"):
                    fresh.get(url)

    assert len(server.requests) == 1


def test_a_name_that_does_not_resolve_is_a_connection_error(monkeypatch, client) -> None:
    def nowhere(host: str) -> list:
        raise OSError("Name or service not known")

    monkeypatch.setattr(urlguard, "resolve_addresses", nowhere)

    with pytest.raises(httpx.ConnectError, match="gone.example.test does not resolve"):
        client.get("http://gone.example.test/")


def _certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_tls_still_sends_the_name_as_sni_and_checks_the_certificate_against_it(monkeypatch, tmp_path) -> None:
    cert, key = _certificate(tmp_path, "secure.example.test")
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    seen_sni: list[str | None] = []
    server_context.sni_callback = lambda sock, name, context: seen_sni.append(name)

    class Ok(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    httpd.socket = server_context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(urlguard, "resolve_addresses", Dns("127.0.0.1"))
    trusted = ssl.create_default_context(cafile=str(cert))
    try:
        with httpx.Client(transport=guarded_transport(limits=httpx.Limits(), verify=trusted)) as client:
            response = client.get(f"https://secure.example.test:{httpd.server_port}/")
    finally:
        httpd.shutdown()
        httpd.server_close()

    assert response.status_code == 200 and response.text == "ok"
    assert seen_sni == ["secure.example.test"]

from __future__ import annotations

import pytest
from django.test import override_settings

from integrations import urlguard
from integrations.urlguard import UnsafeDestination, check_url

ALWAYS_REFUSED = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.GOOGLE.INTERNAL./computeMetadata/v1/",
    "http://169.254.170.2/v2/credentials",
    "http://100.100.100.200/latest/meta-data",
    "http://[::ffff:169.254.169.254]/",
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 form of 169.254.169.254
    "http://169.254.10.1/",  # link-local
    "http://0.0.0.0:8080/",
    "ftp://example.com/x",
    "file:///etc/passwd",
    "http://user:pw@example.com/",
    "http:///no-host",
]


@pytest.mark.parametrize("url", ALWAYS_REFUSED)
@pytest.mark.parametrize("allow_private", [True, False])
def test_metadata_and_odd_urls_are_refused_whatever_the_setting(url: str, allow_private: bool) -> None:
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=allow_private):
        with pytest.raises(UnsafeDestination):
            check_url(url)


PRIVATE = [
    "http://127.0.0.1:4318/v1/traces",
    "http://localhost:6006",
    "http://[::1]:8080/hook",
    "http://10.1.2.3/hook",
    "http://192.168.0.10:5000",
    "http://172.16.5.4/",
    "http://100.64.0.1/",  # carrier-grade NAT: not global
]


@pytest.mark.parametrize("url", PRIVATE)
def test_private_ranges_are_allowed_by_default_for_self_hosting(url: str) -> None:
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=True):
        check_url(url)


@pytest.mark.parametrize("url", PRIVATE)
def test_private_ranges_are_refused_when_the_setting_is_off(url: str) -> None:
    urlguard.forget_resolutions()
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=False):
        with pytest.raises(UnsafeDestination, match="private|loopback"):
            check_url(url)


def test_public_addresses_pass_with_the_setting_off() -> None:
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=False):
        check_url("https://8.8.8.8/v1/traces", resolve=False)


def test_a_name_resolving_to_a_refused_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import ipaddress

    monkeypatch.setattr(urlguard, "resolve_addresses", lambda host: [ipaddress.ip_address("169.254.169.254")])
    with pytest.raises(UnsafeDestination, match="resolves to 169.254.169.254"):
        check_url("https://innocent.example.com/hook")


def test_a_name_resolving_to_a_private_address_follows_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    import ipaddress

    monkeypatch.setattr(urlguard, "resolve_addresses", lambda host: [ipaddress.ip_address("10.0.0.5")])
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=True):
        check_url("https://collector.internal/v1/traces")
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=False):
        with pytest.raises(UnsafeDestination):
            check_url("https://collector.internal/v1/traces")


def test_an_unresolvable_name_passes_unless_it_must_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(host: str) -> list:
        raise OSError("no such host")

    monkeypatch.setattr(urlguard, "resolve_addresses", fail)
    check_url("https://not-yet-in-dns.example/hook")
    with pytest.raises(UnsafeDestination, match="does not resolve"):
        check_url("https://not-yet-in-dns.example/hook", require_resolvable=True)

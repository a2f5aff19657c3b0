from __future__ import annotations

import ipaddress

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
        check_url("https://8.8.8.8/v1/traces")


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


def test_an_unresolvable_name_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(host: str) -> list:
        raise OSError("no such host")

    monkeypatch.setattr(urlguard, "resolve_addresses", fail)
    check_url("https://not-yet-in-dns.example/hook")


# 169.254.169.254 (and 0.0.0.0) as inet_aton, curl and browsers read a numeric host: no DNS needed.
NUMERIC = [
    ("http://2852039166/", "2852039166 (= 169.254.169.254) is a cloud metadata address"),
    ("http://0xa9fea9fe/", "0xa9fea9fe (= 169.254.169.254) is a cloud metadata address"),
    ("http://0XA9FEA9FE./", "0xa9fea9fe (= 169.254.169.254) is a cloud metadata address"),
    ("http://0251.0376.0251.0376/", "0251.0376.0251.0376 (= 169.254.169.254) is a cloud metadata address"),
    ("http://169.254.43518/", "169.254.43518 (= 169.254.169.254) is a cloud metadata address"),
    ("http://0xa9.0xfe.0xa9.0xfe/", "0xa9.0xfe.0xa9.0xfe (= 169.254.169.254) is a cloud metadata address"),
    ("http://169.16689662/", "169.16689662 (= 169.254.169.254) is a cloud metadata address"),
    ("http://0:8080/hook", "0 (= 0.0.0.0) is not a unicast address"),
    ("http://0.0.0.7/", "0.0.0.7 is not a unicast address"),
    ("http://[::a9fe:a9fe]/", "::a9fe:a9fe (= 169.254.169.254) is a cloud metadata address"),  # IPv4-compatible
    ("http://[2002:a9fe:a9fe::1]/", "2002:a9fe:a9fe::1 (= 169.254.169.254) is a cloud metadata address"),  # 6to4
    ("http://１６９.２５４.１６９.２５４/", "169.254.169.254 is a cloud metadata address"),  # full-width digits
    ("http://1.2.3.4.5/", "1.2.3.4.5 ends in a number but is not an IPv4 address"),
    ("http://08.1.1.1/", "08.1.1.1 ends in a number but is not an IPv4 address"),
    ("http://hooks.example.123/", "hooks.example.123 ends in a number but is not an IPv4 address"),
]


def _no_dns(host: str) -> list:
    raise AssertionError(f"{host!r} was looked up: a numeric host is an address")


@pytest.mark.parametrize(("url", "why"), NUMERIC)
@pytest.mark.parametrize("allow_private", [True, False])
def test_numeric_hosts_are_read_as_addresses_without_dns(url, why, allow_private, monkeypatch) -> None:
    monkeypatch.setattr(urlguard, "resolve_addresses", _no_dns)
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=allow_private):
        with pytest.raises(UnsafeDestination) as refused:
            check_url(url)
    assert str(refused.value) == why


@pytest.mark.parametrize("host", ["2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "0"])
def test_the_connection_reads_numeric_hosts_the_same_way(host, monkeypatch) -> None:
    monkeypatch.setattr(urlguard, "resolve_addresses", _no_dns)
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=True):
        with pytest.raises(UnsafeDestination, match=r"\(= (169\.254\.169\.254|0\.0\.0\.0)\)"):
            urlguard.connect_addresses(host)


def test_a_numeric_private_address_follows_the_setting(monkeypatch) -> None:
    monkeypatch.setattr(urlguard, "resolve_addresses", _no_dns)
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=True):
        check_url("http://2130706433:4318/v1/traces")  # 127.0.0.1
        assert urlguard.connect_addresses("0x7f.1") == (ipaddress.ip_address("127.0.0.1"),)
    with override_settings(TRACERELAY_ALLOW_PRIVATE_DESTINATIONS=False):
        with pytest.raises(UnsafeDestination, match=r"2130706433 \(= 127\.0\.0\.1\) is a private"):
            check_url("http://2130706433:4318/v1/traces")


@pytest.mark.parametrize(
    "url", ["http://hooks.example.com/a b", "http://hooks.example.com/\tx", "http://evil.example\\@127.0.0.1/"]
)
def test_spaces_backslashes_and_control_characters_are_refused(url) -> None:
    with pytest.raises(UnsafeDestination, match="no spaces, backslashes or control characters"):
        check_url(url)


def test_a_name_is_judged_by_the_addresses_it_resolves_to_now_hosts_file_included(monkeypatch) -> None:
    urlguard.forget_resolutions()
    looked_up: list[str] = []

    def resolve(host: str) -> list:
        looked_up.append(host)
        return [ipaddress.ip_address("169.254.169.254")]

    monkeypatch.setattr(urlguard, "resolve_addresses", resolve)
    with pytest.raises(UnsafeDestination, match="imds resolves to 169.254.169.254 is a cloud metadata address"):
        check_url("http://IMDS./latest")
    assert looked_up == ["imds"]
    urlguard.forget_resolutions()


def test_url_refusal_is_the_message_every_entry_point_shows() -> None:
    assert urlguard.url_refusal("https://hooks.example.com/x") is None
    assert urlguard.url_refusal("http://0xa9fea9fe/") == (
        "This URL may not be used: 0xa9fea9fe (= 169.254.169.254) is a cloud metadata address."
    )


# --- same_address: is a changed URL another address? -----------------------------------------------


@pytest.mark.parametrize(
    "first,second",
    [
        ("https://cloud.langfuse.com", "https://cloud.langfuse.com/"),
        ("https://cloud.langfuse.com", "HTTPS://Cloud.Langfuse.COM"),
        ("https://cloud.langfuse.com", "https://cloud.langfuse.com:443/"),
        ("http://collector:4318/v1/traces", "http://COLLECTOR:4318/v1/traces/"),
        ("http://collector/v1/traces", "http://collector:80/v1/traces"),
        ("http://collector./v1", "http://collector/v1"),
        ("http://[::1]:8080/x", "http://[0:0:0:0:0:0:0:1]:8080/x"),
        ("https://hooks.example.com/x#part", "https://hooks.example.com/x"),
        (" https://hooks.example.com/x ", "https://hooks.example.com/x"),
        ("https://bücher.example/x", "https://xn--bcher-kva.example/x"),
    ],
)
def test_a_cosmetic_difference_is_the_same_address(first: str, second: str) -> None:
    assert urlguard.same_address(first, second)


@pytest.mark.parametrize(
    "first,second",
    [
        ("https://cloud.langfuse.com", "https://us.cloud.langfuse.com"),
        ("https://cloud.langfuse.com", "http://cloud.langfuse.com"),  # another scheme: another port
        ("https://cloud.langfuse.com", "https://cloud.langfuse.com:8443"),
        ("http://collector:4318", "http://collector:443"),
        ("https://webhook.site/aaaa", "https://webhook.site/bbbb"),  # one host, two receivers
        ("https://hooks.example.com/x", "https://hooks.example.com/X"),  # paths are case-sensitive
        ("https://hooks.example.com/x?to=a", "https://hooks.example.com/x?to=b"),
        ("https://hooks.example.com/x", "https://hooks.example.com.evil.test/x"),
        ("https://hooks.example.com/x", None),
        ("not a url", "not a url either"),
    ],
)
def test_another_host_port_scheme_path_or_query_is_another_address(first: str, second: str | None) -> None:
    assert not urlguard.same_address(first, second)
    assert not urlguard.same_address(second, first)


def test_no_address_is_the_same_as_no_address() -> None:
    assert urlguard.same_address(None, None)

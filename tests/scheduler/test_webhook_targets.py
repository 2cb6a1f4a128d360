"""Where webhooks may point: every spelling of an internal address is refused at
registration (naming ``url``), and every address a name resolves to is checked again
at delivery, unless private targets are allowed."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.api.events import register_webhook
from hopindex.backends.events.sqlite_log import SqliteEventLog
from hopindex.core.errors import InvalidInputError
from hopindex.scheduler.webhook_targets import (
    IPAddress,
    SystemResolver,
    WebhookTargetRefusedError,
    check_webhook_url,
    parse_ipv4,
    parse_target,
    pin_target,
    refusal_reason,
    resolve_target,
)

INDEX = "curie"

# (url, why it must be refused): each spelling a resolver or browser reads as an
# internal address, or a name that is loopback by definition.
REFUSED = [
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("http://[fd00:ec2::254]/latest/meta-data/", "cloud metadata"),
    ("http://localhost:6379/", "loopback"),
    ("http://LocalHost./admin", "loopback"),
    ("http://api.localhost/", "loopback"),
    ("http://[::1]:22/", "loopback"),
    ("http://127.0.0.1/", "loopback"),
    ("http://127.1/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://0x7f.1/", "loopback"),
    ("http://0177.0.0.1/", "loopback"),
    ("http://017700000001/", "loopback"),
    ("http://127.0.0.1./", "loopback"),
    ("http://\uff11\uff12\uff17.0.0.1/", "loopback"),  # full-width digits
    ("http://127\u30020\u30020\u30021/", "loopback"),  # ideographic full stops
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[64:ff9b::7f00:1]/", "loopback"),  # NAT64
    ("http://[2002:7f00:1::]/", "loopback"),  # 6to4
    ("http://[::127.0.0.1]/", "loopback"),  # IPv4-compatible
    ("http://10.0.0.1/", "private"),
    ("http://172.16.5.4:8080/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://3232235777/", "private"),  # 192.168.1.1
    ("http://[fc00::1]/", "private"),
    ("http://[::ffff:10.0.0.1]/", "private"),
    ("http://169.254.1.1/", "link-local"),
    ("http://[fe80::1%25eth0]/", "link-local"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://240.0.0.1/", "private"),
    ("http://100.64.0.1/", "not globally routable"),
    ("https://user:pw@10.1.2.3/hook?token=zz", "private"),
]

# Not URLs webhooks can use at all (whatever allow_private says).
MALFORMED = ["ftp://example.org/x", "example.org/hook", "http://", "http://:80/",
             "https://host:notaport/x", "https://host:0/x", "https://host:70000/x",
             "file:///etc/passwd", "http://1.2.3.4.5/", "http://08.0.0.1/",
             "http://example.123/", "http://a%2eb/", "http://exa mple.org/",
             "http://[::1/", "http://[not-v6]/", "http://a..b/"]

PUBLIC = ["https://example.org/hook", "http://hooks.example.org:8080/x?y=1",
          "https://93.184.216.34/", "https://[2606:4700:4700::1111]/x",
          "https://b\u00fccher.example/h", "http://8.8.8.8./"]


@pytest.fixture
def log(tmp_path: Path) -> Iterator[SqliteEventLog]:
    log = SqliteEventLog(tmp_path / "events.sqlite3")
    yield log
    log.close()


@pytest.mark.parametrize(("url", "reason"), REFUSED, ids=[u for u, _ in REFUSED])
def test_internal_targets_are_refused_at_registration(log: SqliteEventLog, url: str,
                                                      reason: str) -> None:
    """Registering an internal address, in any spelling, is an input error naming
    ``url`` and the kind of address, showing no credentials; nothing is stored."""
    with pytest.raises(InvalidInputError) as caught:
        register_webhook(log, INDEX, url, None)
    assert caught.value.where == "url"
    assert reason in str(caught.value) and "HOPINDEX_WEBHOOK_ALLOW_PRIVATE" in str(caught.value)
    assert "pw" not in str(caught.value) and "zz" not in str(caught.value)
    assert log.list_webhooks() == []


@pytest.mark.parametrize("url", [u for u, _ in REFUSED])
def test_allow_private_lets_internal_targets_register(log: SqliteEventLog, url: str) -> None:
    """With private targets allowed the same URLs register as they are."""
    hook = register_webhook(log, INDEX, url, None, allow_private=True)
    assert log.list_webhooks(INDEX) == [hook] and hook.url == url


@pytest.mark.parametrize("url", MALFORMED)
@pytest.mark.parametrize("allow_private", [False, True])
def test_malformed_urls_are_refused_either_way(log: SqliteEventLog, url: str,
                                               allow_private: bool) -> None:
    """A URL that is not http(s) with a valid host and port is an input error naming
    ``url`` whether or not private targets are allowed."""
    with pytest.raises(InvalidInputError) as caught:
        register_webhook(log, INDEX, url, None, allow_private=allow_private)
    assert caught.value.where == "url"
    assert log.list_webhooks() == []


@pytest.mark.parametrize("url", PUBLIC)
def test_public_targets_register(log: SqliteEventLog, url: str) -> None:
    """Names and public addresses (IPv4, IPv6, internationalised names) are accepted."""
    assert register_webhook(log, INDEX, url, None).url == url


@pytest.mark.parametrize(("spelling", "address"), [
    ("127.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("0x7F.0.0.1", "127.0.0.1"),
    ("0177.0.0.01", "127.0.0.1"), ("0", "0.0.0.0"), ("0x", "0.0.0.0"),
    ("10.0.0.1.", "10.0.0.1"), ("4294967295", "255.255.255.255"),
    ("1.2.3.4.5", None), ("4294967296", None), ("256.1.1.1", None), ("1.2.65536", None),
    ("08", None), ("0x1g", None), ("example.org", None), ("1e3", None), ("", None),
    ("1_0.0.0.1", None), ("+1.0.0.1", None),
])
def test_ipv4_spellings_read_as_inet_aton_does(spelling: str, address: str | None) -> None:
    """Decimal, octal, hex and short forms give the address a resolver would use; other
    text is no IPv4 address."""
    parsed = parse_ipv4(spelling)
    assert (str(parsed) if parsed else None) == address


class FixedResolver:
    """A resolver that answers from a table and counts its lookups: the seam delivery
    resolves through, so a test can make a public-looking name resolve anywhere."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.lookups: list[str] = []

    def resolve_host(self, host: str, port: int) -> list[IPAddress]:
        self.lookups.append(host)
        if host not in self.answers:
            raise OSError(f"{host}: no such name")
        return [ipaddress.ip_address(a) for a in self.answers[host]]


@pytest.mark.parametrize("answer", [["127.0.0.1"], ["::1"], ["10.1.2.3"],
                                    ["169.254.169.254"], ["::ffff:127.0.0.1"],
                                    ["93.184.216.34", "127.0.0.1"]])
def test_a_name_resolving_to_an_internal_address_is_refused(answer: list[str]) -> None:
    """A public-looking name passes registration; at delivery, any internal address
    among those it resolves to refuses the target (a round-robin answer with one
    bad address among good ones too)."""
    url = "https://hooks.example.org/in"
    target = check_webhook_url(url, allow_private=False)
    resolver = FixedResolver({"hooks.example.org": answer})
    with pytest.raises(WebhookTargetRefusedError, match="resolves to"):
        resolve_target(target, resolver, allow_private=False)
    assert resolve_target(target, resolver, allow_private=True) == \
        [ipaddress.ip_address(a) for a in answer]


def test_localhost_resolves_through_the_system_and_is_refused() -> None:
    """The system resolver's answer for ``localhost`` (allowed past the registration
    check here) is a loopback address, refused at delivery."""
    target = parse_target("http://localhost:9/x")
    with pytest.raises(WebhookTargetRefusedError, match="loopback"):
        resolve_target(target, SystemResolver(), allow_private=False)


def test_a_literal_address_is_not_resolved() -> None:
    """An address in the URL, in any spelling, is the address: no lookup is made."""
    resolver = FixedResolver({})
    target = parse_target("http://2130706433:8080/x")
    assert resolve_target(target, resolver, allow_private=True) == \
        [ipaddress.ip_address("127.0.0.1")]
    assert resolver.lookups == []


def test_pinned_request_goes_to_the_checked_address_under_the_name() -> None:
    """The request URL holds the checked address (no second lookup can change it); the
    Host header and the TLS server name keep the registered name, credentials are left
    out of the URL."""
    target = parse_target("https://bob:pw@Hooks.Example.org/in?x=1")
    pinned = pin_target(target, ipaddress.ip_address("93.184.216.34"))
    assert pinned.url == "https://93.184.216.34:443/in?x=1"
    assert pinned.host_header == "hooks.example.org"
    assert pinned.sni_hostname == "hooks.example.org"
    v6 = pin_target(parse_target("http://hooks.example.org:8080/"),
                    ipaddress.ip_address("2606:4700::1"))
    assert v6.url == "http://[2606:4700::1]:8080/"
    assert v6.host_header == "hooks.example.org:8080" and v6.sni_hostname is None


def test_every_refused_class_has_a_reason_and_public_ones_none() -> None:
    """Public addresses have no refusal reason; the well-known internal ones each do."""
    for public in ("93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "2a00:1450::1"):
        assert refusal_reason(ipaddress.ip_address(public)) is None
    for internal in ("127.0.0.1", "10.0.0.1", "169.254.169.254", "fd00:ec2::254",
                     "224.0.0.1", "0.0.0.0", "::", "::1", "100.64.0.1", "192.0.2.1",
                     "255.255.255.255", "2001:db8::1"):
        assert refusal_reason(ipaddress.ip_address(internal)) is not None, internal

"""Where a webhook may point: public addresses only, however the URL spells them.

A webhook URL is a request the server makes on a user's behalf, so it must not
reach what only the server can reach: loopback, private and link-local networks,
the cloud metadata service, multicast, reserved and unspecified addresses. The
check runs twice: on the URL at registration (every spelling of an IP address
``inet_aton`` and browsers accept: ``2130706433``, ``0x7f.1``, ``0177.0.0.1``,
``127.1``, ``[::ffff:127.0.0.1]``), and on every address the host name resolves
to at delivery, after which the request goes to the address that was checked
(``pin_target``): a name cannot resolve to a public address for the check and a
private one for the connection. ``HOPINDEX_WEBHOOK_ALLOW_PRIVATE=true`` where a
webhook is registered turns the address classes off for that webhook (a receiver on
the same host or network); the decision is stored with it and every delivering process
obeys it (``webhooks.private_allowed``). Syntax is always checked.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import SplitResult, urlsplit

from hopindex.core.errors import InvalidInputError, PermanentStageError
from hopindex.core.redact import redact_url

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

SCHEMES = ("http", "https")
ALLOW_PRIVATE_VARIABLE = "HOPINDEX_WEBHOOK_ALLOW_PRIVATE"
DEFAULT_PORTS = {"http": 80, "https": 443}
# Cloud metadata services: link-local or private already, named for a clearer refusal.
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("169.254.169.254"),
                                ipaddress.ip_address("fd00:ec2::254")})
# IPv6 prefixes that carry an IPv4 address in their last 32 bits and reach it through
# a translator: the well-known NAT64 prefix and the deprecated IPv4-compatible range.
_EMBEDDING_V4 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::/96"))
# A host name's labels after IDNA: letters, digits, hyphen, underscore.
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
# The last label is a number in some base, so inet_aton reads the host as an address.
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")


class WebhookTargetRefusedError(PermanentStageError):
    """The webhook's host is, or resolves to, an address webhooks may not reach."""


class Resolver(Protocol):
    def resolve_host(self, host: str, port: int) -> list[IPAddress]:
        """Every address ``host`` resolves to; ``OSError`` when it does not resolve."""
        ...


class SystemResolver:
    """The operating system's resolver (``getaddrinfo``), as any client would use."""

    def resolve_host(self, host: str, port: int) -> list[IPAddress]:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        found: list[IPAddress] = []
        for _family, _type, _proto, _name, sockaddr in infos:
            # An IPv6 sockaddr's host may carry a zone ("fe80::1%eth0").
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if address not in found:
                found.append(address)
        return found


def parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """``host`` as ``inet_aton`` reads it: one to four dot-separated numbers, each
    decimal, octal (leading 0) or hex (0x), the last filling the remaining bytes
    (``127.1`` is 127.0.0.1, ``2130706433`` too). None when it is no such number."""
    labels = host.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()  # a trailing dot names the same host
    if not 1 <= len(labels) <= 4:
        return None
    numbers: list[int] = []
    for label in labels:
        if label.startswith(("0x", "0X")):
            digits, base = label[2:] or "0", 16
        elif len(label) > 1 and label.startswith("0"):
            digits, base = label[1:], 8
        else:
            digits, base = label, 10
        try:
            numbers.append(int(digits, base) if digits.isalnum() and digits.isascii() else -1)
        except ValueError:
            return None
        if numbers[-1] < 0:
            return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, 6to4, Teredo, NAT64)."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in net for net in _EMBEDDING_V4) and int(address) > 1:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal_reason(address: IPAddress) -> str | None:
    """Why webhooks may not reach ``address`` (loopback, private …), None if they may."""
    inner = embedded_ipv4(address)
    if inner is not None and (reason := refusal_reason(inner)) is not None:
        return f"{reason}: it carries {inner}"
    checks = (
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address in METADATA_ADDRESSES, "cloud metadata"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (address.is_private, "private"),
        (address.is_reserved, "reserved"),
        (not address.is_global, "not globally routable"),
    )
    return next((why for hit, why in checks if hit), None)


@dataclass(frozen=True, slots=True)
class Target:
    """A checked webhook URL: its parts, the host in ASCII, and its literal address."""

    parts: SplitResult
    host: str
    port: int
    literal: IPAddress | None

    @property
    def endpoint(self) -> str:
        """``scheme://host:port``: what per-endpoint limits and circuit breakers key on
        (never the path, query or userinfo, which may hold secrets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.parts.scheme}://{host}:{self.port}"


def _ascii_host(raw: str) -> str:
    """The host as DNS and address parsing see it: IDNA-encoded (so full-width digits
    and dots become ASCII ones), lower case, each label checked."""
    try:
        host = raw.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise ValueError(f"host {raw!r} is not a valid name ({exc})") from None
    labels = host.removesuffix(".").split(".")
    if not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"host {raw!r} is not a valid name")
    return host


def parse_target(url: str) -> Target:
    """``url``'s scheme, host and port checked for syntax; ValueError naming what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError("not an http:// or https:// URL")
    raw_host = parts.hostname
    if not raw_host:
        raise ValueError("the URL has no host")
    port = parts.port  # ValueError on a port that is no number or out of range
    if port == 0:
        raise ValueError("port 0 is not a port a server listens on")
    port = port or DEFAULT_PORTS[parts.scheme]
    if ":" in raw_host:  # urlsplit found brackets: an IPv6 literal, maybe with a zone
        try:
            literal: IPAddress | None = ipaddress.IPv6Address(raw_host.split("%", 1)[0])
        except ValueError:
            raise ValueError(f"[{raw_host}] is not an IPv6 address") from None
        return Target(parts, str(literal), port, literal)
    host = _ascii_host(raw_host)
    last = host.removesuffix(".").rsplit(".", 1)[-1]
    literal = parse_ipv4(host)
    if literal is None and _NUMERIC_LABEL.fullmatch(last):
        # A name that ends in a number is read as an address by resolvers and browsers.
        raise ValueError(f"host {raw_host!r} is neither a name nor an IPv4 address")
    return Target(parts, str(literal) if literal else host.removesuffix("."), port, literal)


def check_webhook_url(url: str, *, allow_private: bool) -> Target:
    """The registration check: InvalidInputError naming ``url`` when the URL is not
    http(s) with a valid host, or its host is an address (in any spelling) or a
    ``localhost`` name that webhooks may not reach."""
    shown = redact_url(url)
    try:
        target = parse_target(url)
    except ValueError as exc:
        raise InvalidInputError(f"webhook URL {shown!r} is not usable: {exc}; give an "
                                "http:// or https:// URL with a host", where="url") from None
    if allow_private:
        return target
    reason: str | None = None
    if target.literal is not None:
        reason = refusal_reason(target.literal)
    elif target.host == "localhost" or target.host.endswith((".localhost", ".localhost.")):
        reason = "loopback"
    if reason is not None:
        raise InvalidInputError(
            f"webhook URL {shown!r} points at {target.host} ({reason}); webhooks may only "
            f"reach public addresses ({ALLOW_PRIVATE_VARIABLE}=true allows the others)",
            where="url")
    return target


def resolve_target(target: Target, resolver: Resolver, *, allow_private: bool
                   ) -> Sequence[IPAddress]:
    """The addresses to connect to, each checked: the literal, or every address the
    name resolves to. WebhookTargetRefusedError when any is refused (one bad answer
    among good ones would let a round-robin name reach it), OSError when the name
    does not resolve."""
    addresses = [target.literal] if target.literal is not None else \
        resolver.resolve_host(target.host, target.port)
    if not addresses:
        raise OSError(f"{target.host} resolved to no address")
    if not allow_private:
        for address in addresses:
            reason = refusal_reason(address)
            if reason is not None:
                raise WebhookTargetRefusedError(
                    f"{target.host} resolves to {address} ({reason}); webhooks may only "
                    f"reach public addresses ({ALLOW_PRIVATE_VARIABLE}=true allows the others)")
    return addresses


@dataclass(frozen=True, slots=True)
class PinnedRequest:
    """A URL whose host is the checked address, and what keeps the request addressed to
    the name: the Host header and, for https, the TLS server name (SNI and the
    certificate check)."""

    url: str
    host_header: str
    sni_hostname: str | None


def pin_target(target: Target, address: IPAddress) -> PinnedRequest:
    parts = target.parts
    ip_host = f"[{address}]" if address.version == 6 else str(address)
    netloc = f"{ip_host}:{target.port}"
    url = parts._replace(netloc=netloc).geturl()
    name = f"[{target.host}]" if ":" in target.host else target.host
    default = DEFAULT_PORTS[parts.scheme] == target.port and parts.port is None
    host_header = name if default else f"{name}:{target.port}"
    sni = target.host if parts.scheme == "https" and target.literal is None else None
    return PinnedRequest(url=url, host_header=host_header, sni_hostname=sni)

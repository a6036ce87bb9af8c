"""Which IP addresses the platform may connect to on a user's behalf: only globally reachable unicast ones.

:func:`refusal` is the one rule every outbound check uses (submit-time URL checks in
:mod:`evaluations.agents.validation` and the connect-time checks of :mod:`evaluations.outbound.connect`). It is
built from ``ipaddress`` and two tables transcribed from the IANA special-purpose address registries
(iana-ipv4-special-registry, iana-ipv6-special-registry, as of 2026), not from ``ipaddress``'s ``is_global`` /
``is_private`` flags, which differ between CPython patch releases and do not look inside IPv6 wrappings.

The rule, for one address:

1. The most specific block of the tables that holds it decides: refused when IANA marks it not globally
   reachable (private use, shared address space 100.64.0.0/10, loopback, link-local, documentation,
   benchmarking, discard, ORCHID, SRv6, unique-local…), allowed when IANA marks it globally reachable (the
   anycast services, AS112, AMT, ORCHIDv2, DETs, inside blocks that are otherwise refused).
2. Blocks that carry an IPv4 address are unwrapped and the embedded address is held to this same rule:
   IPv4-mapped ``::ffff:0:0/96``, the NAT64 well-known prefix ``64:ff9b::/96``, 6to4 ``2002::/16`` (bits
   16–47) and Teredo ``2001::/32`` (the server in bits 32–63 *and* the client, bit-inverted, in the low 32).
3. Refused outright although not in the registries: multicast (224.0.0.0/4, ff00::/8), IPv6 site-local
   ``fec0::/10`` (deprecated, RFC 3879), the deprecated IPv4-compatible ``::/96`` whatever it embeds (RFC 4291
   §2.5.5.1), the local-use translation prefix ``64:ff9b:1::/48`` (registry: not global; where its IPv4 sits
   depends on a local prefix length, so it cannot be unwrapped), the deprecated 6to4 relay anycast
   192.88.99.0/24, and every IPv6 address outside the global unicast space ``2000::/3`` (reserved and
   unallocated space, ``::ffff:0:a.b.c.d`` SIIT forms).
4. Any other IPv4 address is a public unicast one and allowed.

A scoped IPv6 address (``fe80::1%eth0``) is refused: a zone only means something on a local link.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

__all__ = ["IPV4_BLOCKS", "IPV6_BLOCKS", "allowed", "refusal"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: ``True``: globally reachable; ``False``: refused; ``"ipv4"``: decided by the IPv4 address it carries.
Verdict = bool | str

#: (block, IANA's name, verdict): the IPv4 special-purpose registry, plus multicast (its own registry).
IPV4_BLOCKS: tuple[tuple[str, str, Verdict], ...] = (
    ("0.0.0.0/8", "'this network'", False),
    ("0.0.0.0/32", "'this host on this network'", False),
    ("10.0.0.0/8", "private-use", False),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT, cloud metadata)", False),
    ("127.0.0.0/8", "loopback", False),
    ("169.254.0.0/16", "link-local (cloud metadata)", False),
    ("172.16.0.0/12", "private-use", False),
    ("192.0.0.0/24", "IETF protocol assignments", False),
    ("192.0.0.0/29", "IPv4 service continuity prefix", False),
    ("192.0.0.8/32", "IPv4 dummy address", False),
    ("192.0.0.9/32", "Port Control Protocol anycast", True),
    ("192.0.0.10/32", "TURN anycast", True),
    ("192.0.0.170/31", "NAT64/DNS64 discovery", False),
    ("192.0.2.0/24", "documentation (TEST-NET-1)", False),
    ("192.31.196.0/24", "AS112-v4", True),
    ("192.52.193.0/24", "AMT", True),
    ("192.88.99.0/24", "deprecated 6to4 relay anycast", False),
    ("192.168.0.0/16", "private-use", False),
    ("192.175.48.0/24", "AS112 direct delegation", True),
    ("198.18.0.0/15", "benchmarking", False),
    ("198.51.100.0/24", "documentation (TEST-NET-2)", False),
    ("203.0.113.0/24", "documentation (TEST-NET-3)", False),
    ("224.0.0.0/4", "multicast", False),
    ("240.0.0.0/4", "reserved", False),
    ("255.255.255.255/32", "limited broadcast", False),
)

#: (block, IANA's name, verdict): the IPv6 special-purpose registry, plus multicast, site-local and the
#: deprecated IPv4-compatible form. Anything outside 2000::/3 that no row allows is refused as well.
IPV6_BLOCKS: tuple[tuple[str, str, Verdict], ...] = (
    ("::/128", "unspecified", False),
    ("::1/128", "loopback", False),
    ("::/96", "IPv4-compatible (deprecated)", False),
    ("::ffff:0:0/96", "IPv4-mapped", "ipv4"),
    ("64:ff9b::/96", "NAT64 well-known prefix", "ipv4"),
    ("64:ff9b:1::/48", "local-use IPv4/IPv6 translation", False),
    ("100::/64", "discard-only", False),
    ("100:0:0:1::/64", "dummy IPv6 prefix", False),
    ("2001::/23", "IETF protocol assignments", False),
    ("2001::/32", "Teredo", "ipv4"),
    ("2001:1::1/128", "Port Control Protocol anycast", True),
    ("2001:1::2/128", "TURN anycast", True),
    ("2001:1::3/128", "DNS-SD SRP anycast", True),
    ("2001:2::/48", "benchmarking", False),
    ("2001:3::/32", "AMT", True),
    ("2001:4:112::/48", "AS112-v6", True),
    ("2001:10::/28", "deprecated ORCHID", False),
    ("2001:20::/28", "ORCHIDv2", True),
    ("2001:30::/28", "drone remote ID tags", True),
    ("2001:db8::/32", "documentation", False),
    ("2002::/16", "6to4", "ipv4"),
    ("2620:4f:8000::/48", "AS112 direct delegation", True),
    ("3fff::/20", "documentation", False),
    ("5f00::/16", "SRv6 SIDs", False),
    ("fc00::/7", "unique-local", False),
    ("fe80::/10", "link-local", False),
    ("fec0::/10", "site-local (deprecated)", False),
    ("ff00::/8", "multicast", False),
)

_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
_TEREDO, _SIXTOFOUR = ipaddress.ip_network("2001::/32"), ipaddress.ip_network("2002::/16")


def _table(rows):
    # Most specific first, so the first block that holds an address is the one that decides.
    return sorted(((ipaddress.ip_network(cidr), name, verdict) for cidr, name, verdict in rows),
                  key=lambda row: -row[0].prefixlen)


_TABLES = {4: _table(IPV4_BLOCKS), 6: _table(IPV6_BLOCKS)}


def _block(ip: Address):
    return next(((net, name, verdict) for net, name, verdict in _TABLES[ip.version] if ip in net), None)


def _embedded(ip: ipaddress.IPv6Address, net) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses a wrapping block carries (Teredo: server and client)."""
    if net == _TEREDO:  # RFC 4380 §4; ipaddress de-obfuscates the client
        return list(ip.teredo)
    if net == _SIXTOFOUR:
        return [ip.sixtofour]
    return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]  # mapped, NAT64 /96: the low 32 bits


def _refusal(ip: Address) -> str | None:
    block = _block(ip)
    if block is not None:
        net, name, verdict = block
        if verdict == "ipv4":
            for inner in _embedded(ip, net):
                reason = _refusal(inner)
                if reason:
                    return f"{name} ({net}) wrapping {inner}, which is {reason}"
            return None
        if verdict is False:
            return f"{name} ({net})"
        return None
    if ip.version == 6 and ip not in _GLOBAL_UNICAST:
        return "outside the IPv6 global unicast space (2000::/3)"
    return None


@lru_cache(maxsize=4096)
def refusal(address: str | Address) -> str | None:
    """Why ``address`` (an IPv4/IPv6 address or its text, possibly with a ``%zone``) may not be connected to —
    e.g. ``"loopback (127.0.0.0/8)"``, ``"6to4 (2002::/16) wrapping 127.0.0.1, which is loopback
    (127.0.0.0/8)"`` — or None when it is a globally reachable unicast address. Text that is not an address is
    refused (``"not an IP address"``)."""
    text = str(address)
    if "%" in text:
        return "a scoped (link-local zone) IPv6 address"
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return "not an IP address"
    return _refusal(ip)


def allowed(address: str | Address) -> bool:
    """Whether ``address`` is a globally reachable unicast address (:func:`refusal` is None)."""
    return refusal(address) is None

"""The address rule (issue 22, item 1): only globally reachable unicast addresses, IPv4 wrapped in IPv6 held to
the same rule. The table is built from the IANA IPv4 and IPv6 special-purpose address registries: for every
block, addresses at its edges (and inside, avoiding its more specific exceptions) with the verdict the registry's
"Globally Reachable" column gives, plus the departures the rule documents (multicast, site-local, IPv4-compatible,
outside 2000::/3) and public addresses that must still pass."""

from __future__ import annotations

import ipaddress

import pytest

from evaluations.outbound import allowed, refusal

OK, NO = True, False

#: (registry block, addresses, verdict) — IANA IPv4 Special-Purpose Address Registry, then multicast.
IPV4 = [
    ("0.0.0.0/8 this network", ["0.0.0.0", "0.0.0.1", "0.255.255.255"], NO),
    ("10.0.0.0/8 private-use", ["10.0.0.1", "10.255.255.254"], NO),
    ("100.64.0.0/10 shared address space", ["100.64.0.1", "100.100.100.200", "100.127.255.254"], NO),
    ("127.0.0.0/8 loopback", ["127.0.0.1", "127.255.255.254"], NO),
    ("169.254.0.0/16 link-local", ["169.254.0.1", "169.254.169.254", "169.254.255.254"], NO),
    ("172.16.0.0/12 private-use", ["172.16.0.1", "172.31.255.254"], NO),
    ("192.0.0.0/24 IETF protocol assignments", ["192.0.0.11", "192.0.0.100", "192.0.0.255"], NO),
    ("192.0.0.0/29 IPv4 service continuity", ["192.0.0.0", "192.0.0.7"], NO),
    ("192.0.0.8/32 IPv4 dummy address", ["192.0.0.8"], NO),
    ("192.0.0.9/32 PCP anycast", ["192.0.0.9"], OK),
    ("192.0.0.10/32 TURN anycast", ["192.0.0.10"], OK),
    ("192.0.0.170/32, 192.0.0.171/32 NAT64/DNS64 discovery", ["192.0.0.170", "192.0.0.171"], NO),
    ("192.0.2.0/24 TEST-NET-1", ["192.0.2.1", "192.0.2.255"], NO),
    ("192.31.196.0/24 AS112-v4", ["192.31.196.1"], OK),
    ("192.52.193.0/24 AMT", ["192.52.193.1"], OK),
    ("192.88.99.0/24 deprecated 6to4 relay anycast (and 192.88.99.2/32 6a44)", ["192.88.99.1", "192.88.99.2"], NO),
    ("192.168.0.0/16 private-use", ["192.168.0.1", "192.168.255.254"], NO),
    ("192.175.48.0/24 AS112 direct delegation", ["192.175.48.1"], OK),
    ("198.18.0.0/15 benchmarking", ["198.18.0.1", "198.19.255.254"], NO),
    ("198.51.100.0/24 TEST-NET-2", ["198.51.100.1"], NO),
    ("203.0.113.0/24 TEST-NET-3", ["203.0.113.1"], NO),
    ("240.0.0.0/4 reserved", ["240.0.0.1", "254.255.255.254"], NO),
    ("255.255.255.255/32 limited broadcast", ["255.255.255.255"], NO),
    ("224.0.0.0/4 multicast (not in the registry)", ["224.0.0.1", "239.255.255.250"], NO),
    ("public, next to special blocks", ["9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
                                        "172.15.255.255", "172.32.0.0", "192.0.1.0", "198.17.255.255",
                                        "198.20.0.0", "223.255.255.254"], OK),
    ("public", ["8.8.8.8", "1.1.1.1", "9.9.9.9", "93.184.215.14"], OK),
]

#: The same for the IANA IPv6 Special-Purpose Address Registry, then the blocks the rule adds.
IPV6 = [
    ("::1/128 loopback", ["::1"], NO),
    ("::/128 unspecified", ["::"], NO),
    ("::ffff:0:0/96 IPv4-mapped, public IPv4", ["::ffff:8.8.8.8", "::ffff:1.1.1.1"], OK),
    ("64:ff9b::/96 NAT64 well-known prefix, public IPv4", ["64:ff9b::808:808"], OK),
    ("64:ff9b:1::/48 local-use translation", ["64:ff9b:1::808:808", "64:ff9b:1:ffff::1"], NO),
    ("100::/64 discard-only", ["100::", "100::ffff:ffff:ffff:ffff"], NO),
    ("100:0:0:1::/64 dummy prefix", ["100:0:0:1::1"], NO),
    ("2001::/23 IETF protocol assignments", ["2001:1::4", "2001:100::1", "2001:1ff:ffff::1"], NO),
    ("2001::/32 Teredo, public server and client", ["2001:0:808:808::f7f7:f7f7"], OK),
    ("2001:1::1/128 PCP anycast", ["2001:1::1"], OK),
    ("2001:1::2/128 TURN anycast", ["2001:1::2"], OK),
    ("2001:1::3/128 DNS-SD SRP anycast", ["2001:1::3"], OK),
    ("2001:2::/48 benchmarking", ["2001:2::1", "2001:2:0:ffff::1"], NO),
    ("2001:3::/32 AMT", ["2001:3::1"], OK),
    ("2001:4:112::/48 AS112-v6", ["2001:4:112::1"], OK),
    ("2001:10::/28 deprecated ORCHID", ["2001:10::1", "2001:1f::1"], NO),
    ("2001:20::/28 ORCHIDv2", ["2001:20::1"], OK),
    ("2001:30::/28 drone remote ID tags", ["2001:30::1"], OK),
    ("2001:db8::/32 documentation", ["2001:db8::1", "2001:db8:ffff::1"], NO),
    ("2002::/16 6to4, public IPv4", ["2002:808:808::1"], OK),
    ("2620:4f:8000::/48 AS112 direct delegation", ["2620:4f:8000::1"], OK),
    ("3fff::/20 documentation", ["3fff::1", "3fff:fff:ffff::1"], NO),
    ("5f00::/16 SRv6 SIDs", ["5f00::1"], NO),
    ("fc00::/7 unique-local", ["fc00::1", "fd00:ec2::254", "fdff:ffff::1"], NO),
    ("fe80::/10 link-local", ["fe80::1", "febf::1", "fe80::1%eth0"], NO),
    ("fec0::/10 site-local (deprecated; not in the registry)", ["fec0::1", "feff::1"], NO),
    ("ff00::/8 multicast (not in the registry)", ["ff02::1", "ff05::1:3"], NO),
    ("::/96 IPv4-compatible (deprecated), any IPv4", ["::8.8.8.8", "::7f00:1"], NO),
    ("outside 2000::/3: reserved, unallocated, SIIT", ["1::1", "4000::1", "e000::1", "::ffff:0:808:808"], NO),
    ("public", ["2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001::1", "3fff:1000::1",
                "2001:200::1"], OK),
]

ROWS = [(block, address, verdict) for block, sample, verdict in IPV4 + IPV6 for address in sample]


@pytest.mark.parametrize(("block", "address", "verdict"), ROWS, ids=[f"{r[1]}" for r in ROWS])
def test_every_registry_block_has_its_verdict(block, address, verdict):
    assert allowed(address) is verdict, f"{address} ({block}): {refusal(address)}"


#: IPv4 addresses that are not globally reachable, each of which every IPv6 wrapping must carry to a refusal.
INNER = ["127.0.0.1", "10.0.0.1", "100.64.0.1", "100.100.100.200", "169.254.169.254", "172.16.0.1",
         "192.168.1.1", "0.0.0.0", "192.0.2.1", "255.255.255.255", "224.0.0.1"]
PUBLIC_V4 = "8.8.4.4"


def wrappings(v4: str) -> dict[str, str]:
    """``{form: IPv6 address}`` carrying ``v4`` in each IPv6 form (Teredo: as server and as client)."""
    n, p = int(ipaddress.IPv4Address(v4)), int(ipaddress.IPv4Address(PUBLIC_V4))
    six = ipaddress.IPv6Address
    return {"mapped ::ffff:0:0/96": str(six((0xFFFF << 32) | n)),
            "compatible ::/96": str(six(n)),
            "NAT64 64:ff9b::/96": str(six((0x64FF9B << 96) | n)),
            "6to4 2002::/16": str(six((0x2002 << 112) | (n << 80) | 1)),
            "Teredo server": str(six((0x20010000 << 96) | (n << 64) | (p ^ 0xFFFFFFFF))),
            "Teredo client": str(six((0x20010000 << 96) | (p << 64) | (n ^ 0xFFFFFFFF)))}


@pytest.mark.parametrize("inner", INNER)
def test_every_ipv6_wrapping_of_an_internal_ipv4_address_is_refused(inner):
    assert not allowed(inner)
    for form, address in wrappings(inner).items():
        reason = refusal(address)
        assert reason, f"{form} {address} carries {inner}"
        assert form == "compatible ::/96" or f"wrapping {inner}," in reason, reason


def test_the_issue_22_cases_are_refused_and_name_what_they_are():
    assert refusal("100.64.0.1") == "shared address space (carrier-grade NAT, cloud metadata) (100.64.0.0/10)"
    assert refusal("100.100.100.200").startswith("shared address space")
    assert refusal("fec0::1") == "site-local (deprecated) (fec0::/10)"
    assert refusal("2002:7f00:1::") == "6to4 (2002::/16) wrapping 127.0.0.1, which is loopback (127.0.0.0/8)"


def test_the_same_wrappings_of_a_public_ipv4_address_pass_except_the_deprecated_compatible_form():
    verdicts = {form: allowed(address) for form, address in wrappings(PUBLIC_V4).items()}
    assert verdicts == {"mapped ::ffff:0:0/96": True, "compatible ::/96": False, "NAT64 64:ff9b::/96": True,
                        "6to4 2002::/16": True, "Teredo server": True, "Teredo client": True}


def test_text_that_is_not_an_address_is_refused():
    assert refusal("example.com") == "not an IP address" and refusal("") == "not an IP address"
    assert allowed(ipaddress.ip_address("8.8.8.8")) and not allowed(ipaddress.ip_address("::1"))

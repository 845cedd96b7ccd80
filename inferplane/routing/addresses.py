"""Addresses: a MetalLB address pool, an endpoint's URL, and the addresses the simulation hands out."""

from __future__ import annotations

import hashlib
import ipaddress
import urllib.parse
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def pool_range(text: str) -> tuple[IPAddress, IPAddress]:
    """The first and last address of a MetalLB pool entry: a range `first-last` or a CIDR.
    ValueError says what is wrong and how to write it."""
    text = text.strip()
    first_text, _, last_text = text.partition("-")
    try:
        if not last_text:
            network = ipaddress.ip_network(text, strict=False)
            return network[0], network[-1]
        first, last = ipaddress.ip_address(first_text.strip()), ipaddress.ip_address(last_text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an address range or CIDR: write a range such as "
                         "172.18.255.200-172.18.255.250 or a CIDR such as 172.18.255.0/24") from None
    if first.version != last.version:
        raise ValueError(f"{text!r} mixes IPv{first.version} and IPv{last.version}: both ends of a range are "
                         "of one family")
    if last < first:
        raise ValueError(f"{text!r} ends before it starts: put the lower address first")
    return first, last


def first_pool_address(text: str) -> str:
    """The address MetalLB gives the first LoadBalancer Service of a pool: its lowest one (MetalLB's
    allocator hands out the lowest free address of a range)."""
    return str(pool_range(text)[0])


# Simulated clusters' load balancers take their addresses from 198.18.0.0/15 (RFC 2544's benchmarking
# range: 131,072 addresses that never route), one per cluster, chosen by its name.
SIMULATED_CLUSTER_ADDRESSES = ipaddress.ip_network("198.18.0.0/15")


def simulated_load_balancer_address(cluster: str) -> str:
    """A cluster's simulated load balancer address: the same for the same name, on every run."""
    usable = SIMULATED_CLUSTER_ADDRESSES.num_addresses - 2  # neither the network nor the broadcast address
    index = int.from_bytes(hashlib.sha256(cluster.encode()).digest()[:8], "big") % usable + 1
    return str(SIMULATED_CLUSTER_ADDRESSES[index])


@dataclass(frozen=True)
class Target:
    """Where an endpoint's URL points: scheme, host and port (the scheme's default when unset)."""

    scheme: str
    host: str
    port: int

    @property
    def address_type(self) -> str:
        """The EndpointSlice addressType for the host: IPv4, IPv6 or FQDN."""
        try:
            return f"IPv{ipaddress.ip_address(self.host).version}"
        except ValueError:
            return "FQDN"


DEFAULT_PORTS = {"http": 80, "https": 443}


def url_target(url: str) -> Target:
    """An endpoint URL's target; ValueError says what is wrong with it."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in DEFAULT_PORTS:
        raise ValueError(f"{url!r} is not an http:// or https:// URL: the gateway forwards HTTP, e.g. "
                         "https://api.together.xyz/")
    try:
        port = parsed.port
    except ValueError:
        raise ValueError(f"{url!r} has a port that is not a number from 1 to 65535") from None
    if not parsed.hostname:
        raise ValueError(f"{url!r} names no host: write it as {parsed.scheme}://HOST[:PORT]/")
    if port == 0:
        raise ValueError(f"{url!r} has port 0: use a port from 1 to 65535, or none for the scheme's default")
    return Target(parsed.scheme, parsed.hostname, port or DEFAULT_PORTS[parsed.scheme])

"""A pod's host ports as Kubernetes' NodePorts filter compares them.

A container port with a ``hostPort`` takes that port on its node for one protocol
and one host address: the same port for another protocol, or for another address
(when neither is the wildcard ``0.0.0.0``), is free (``HostPortInfo.CheckConflict``).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ANY_IP", "PROTOCOLS", "HostPort", "host_port_of"]

#: The wildcard address: a port taken on it is taken on every address.
ANY_IP = "0.0.0.0"
#: The protocols a container port may name.
PROTOCOLS = ("TCP", "UDP", "SCTP")


class HostPort(NamedTuple):
    """One host port: the address, the protocol and the port number."""

    host_ip: str
    protocol: str
    port: int


def host_port_of(entry: int | HostPort) -> HostPort:
    """The entry as Kubernetes keeps it (``HostPortInfo``'s sanitising): a bare port
    number is TCP on every address; an empty address is every address and an empty
    protocol TCP.

    >>> host_port_of(8080)
    HostPort(host_ip='0.0.0.0', protocol='TCP', port=8080)
    """
    if isinstance(entry, int):
        return HostPort(ANY_IP, "TCP", entry)
    return HostPort(entry.host_ip or ANY_IP, entry.protocol or "TCP", entry.port)

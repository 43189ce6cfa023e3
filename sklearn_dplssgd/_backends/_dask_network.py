"""Whether a ``dask.distributed`` cluster's network may carry a fit's secrets.

A fit on a cluster moves the partitions' noise-free clipped-gradient sums,
their sampling seeds and the fit's generator between the client, the
scheduler and the workers. They are as safe as the network they cross:
local (this process or loopback) or TLS, or a network the user declares
trusted with the Dask setting :data:`TRUSTED_NETWORK_SETTING`.
"""

import ipaddress

import numpy as np

__all__ = [
    "TRUSTED_NETWORK_SETTING",
    "UntrustedNetworkError",
    "active_client",
    "check_cluster_network",
    "is_protected_address",
]

# The Dask configuration key by which a user declares the cluster's network
# trusted (see check_cluster_network).
TRUSTED_NETWORK_SETTING = "sklearn_dplssgd.trusted_network"

UNTRUSTED_NETWORK_MESSAGE = (
    "The Dask cluster is reached at {address}, which is neither local to this machine "
    "nor TLS: a fit sends the noise-free sums of clipped gradients, and the generator "
    "that draws its noise, between the client, the scheduler and the workers, and "
    "anyone who reads that plaintext traffic learns what the noise protects. Nothing "
    "was sent. Connect the cluster with TLS (tls:// addresses, see "
    "distributed.security.Security), or, if every machine and link of the cluster is "
    "trusted, declare it with dask.config.set({{'sklearn_dplssgd.trusted_network': "
    "True}})."
)


class UntrustedNetworkError(RuntimeError):
    """A Dask cluster reached in plaintext over a network not declared trusted."""


def active_client():
    """The active ``dask.distributed`` client, or None (then Dask's local scheduler)."""
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:
        return None


# Comm schemes whose traffic is encrypted (TLS, and websockets over TLS).
_ENCRYPTED_SCHEMES = ("tls", "wss")


def is_protected_address(address):
    """Whether traffic to a ``dask.distributed`` address is local or encrypted.

    Local: ``inproc://`` (this process), or any transport to a loopback
    address (``127.0.0.0/8``, ``::1``, ``localhost``), whose traffic never
    leaves this machine. Encrypted: ``tls://`` and ``wss://``. Anything
    else, a host name other than ``localhost`` included (it may resolve
    anywhere), is neither.

    Parameters
    ----------
    address : str
        A scheduler's or worker's address, such as ``"tcp://10.0.0.5:8786"``.

    Returns
    -------
    bool
    """
    from distributed.comm import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        if scheme == "inproc" or scheme in _ENCRYPTED_SCHEMES:
            return True
        host, _ = parse_host_port(location, default_port=0)
    except (TypeError, ValueError):
        return False
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    # An IPv4 address written as an IPv6 one (::ffff:127.0.0.1) is read as itself.
    return (getattr(ip, "ipv4_mapped", None) or ip).is_loopback


def check_cluster_network(client=None):
    """Refuse a cluster whose traffic a third party could read, unless declared trusted.

    A fit on a ``dask.distributed`` cluster moves secrets between processes:
    the partitions' noise-free clipped-gradient sums every step, their
    sampling seeds, and the fit's generator (which draws the noise). They
    are as safe as the network they cross: the scheduler and every worker
    must be reached locally or over TLS (:func:`is_protected_address`),
    unless the user declares the network trusted with the Dask
    configuration key ``sklearn_dplssgd.trusted_network`` (``True``).

    Parameters
    ----------
    client : distributed.Client or None, default=None
        None: the active client, if any (none: Dask's local scheduler, in
        this process, which sends nothing).

    Returns
    -------
    network : {None, "protected", "declared"}
        None without a client; ``"protected"`` when every address is local
        or TLS; ``"declared"`` when one is not, under the trusted setting.

    Raises
    ------
    UntrustedNetworkError
        Naming the first unprotected address (an address is not private).
    """
    import dask

    client = active_client() if client is None else client
    if client is None:
        return None
    trusted = dask.config.get(TRUSTED_NETWORK_SETTING, default=False)
    if not isinstance(trusted, (bool, np.bool_)):
        raise TypeError(
            f"The Dask setting {TRUSTED_NETWORK_SETTING!r} must be True or False; got "
            f"{trusted!r}.")
    addresses = [client.scheduler.address, *client.scheduler_info()["workers"]]
    exposed = [address for address in addresses if not is_protected_address(address)]
    if not exposed:
        return "protected"
    if trusted:
        return "declared"
    raise UntrustedNetworkError(UNTRUSTED_NETWORK_MESSAGE.format(address=exposed[0]))

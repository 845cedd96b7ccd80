"""Defaults per cloud that admission and the cloud modules share."""

# The Kubernetes minor version a cluster gets when its spec names none: each cloud's current
# default channel as we read it (unconfirmed, kept here so it is easy to change). Existing clusters
# have no default: their version is whatever the operator runs, so it must be declared.
DEFAULT_KUBERNETES_VERSION: dict[str, str] = {
    "EKS": "1.34",
    "GKE": "1.34",
    "AKS": "1.34",
    "Nebius": "1.33",
    "Vultr": "1.34",
    "Civo": "1.33",
}


def minor(version: str) -> tuple[int, int]:
    """(1, 36) for "1.36" or "1.36.2"."""
    major, minor_, *_ = version.split(".")
    return int(major), int(minor_)

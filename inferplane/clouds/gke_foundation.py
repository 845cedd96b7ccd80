"""What a GKE cluster stands on: a VPC network with one subnetwork (node, pod and service ranges),
the service account its nodes run as, with the IAM roles GKE nodes need, and the Filestore API enabled
on the project, which the Filestore CSI driver provisions ModelCache volumes through.

Bring your own: `network` and `subnetwork` replace both network resources; `service_account` (an
email) replaces the service account and its IAM members.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from inferplane.clouds.foundation import Foundation, Namer, ResourceBuilder, bounded_name

COMPUTE = "compute.gcp.m.upbound.io/v1beta1"
CLOUDPLATFORM = "cloudplatform.gcp.m.upbound.io/v1beta1"

# Ranges of the subnetwork, as Modelplane sets them: 252 node addresses; pods and services from
# secondary ranges the cluster names (VPC-native networking), each a /16.
NODE_CIDR = "10.0.0.0/24"
POD_RANGE = {"rangeName": "pods", "ipCidrRange": "10.1.0.0/16"}
SERVICE_RANGE = {"rangeName": "services", "ipCidrRange": "10.2.0.0/16"}
# GKE's least-privilege role for a node service account (logs, metrics, autoscaling signals), and
# image pulls from Artifact Registry, where Google serves the GPU driver installer's images.
NODE_ROLES = {"node": "roles/container.defaultNodeServiceAccount", "registry": "roles/artifactregistry.reader"}
# Access is governed by the service account's IAM roles, not by the legacy scopes: nodes with a
# custom account get the one scope that defers to IAM.
NODE_OAUTH_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
# A service account id has 6-30 characters: lowercase letters, digits and hyphens, a letter first.
ACCOUNT_ID_MAX = 30
ACCOUNT_EMAIL = "{account}@{project}.iam.gserviceaccount.com"
# The Filestore API, off in a fresh project: without it the Filestore CSI driver's volumes stay Pending
# (SERVICE_DISABLED). Enabled as Modelplane v0.3.1 does (functions/compose-gke-cluster/function/fn.py,
# compose_filestore_api): a ProjectService that leaves the API on when it is deleted, since other
# workloads of the project may use it (the provider's ProjectService disableOnDestroy field).
FILESTORE_API = {"service": "file.googleapis.com", "disableOnDestroy": False}
FILESTORE_API_KEY = "projectservice-filestore"


def account_id(name: str) -> str:
    """A legal service account id for the node account named `name` on the control plane (a
    Kubernetes name, so it already ends in a letter or digit)."""
    cleaned = re.sub(r"[^a-z0-9-]", "-", name.lower())
    if not cleaned[:1].isalpha():
        cleaned = "sa-" + cleaned
    return bounded_name(cleaned, ACCOUNT_ID_MAX)


@dataclass(frozen=True)
class GKEInputs:
    name: str
    region: str
    pools: Sequence[str]
    project: str | None = None
    network: str | None = None
    subnetwork: str | None = None
    service_account: str | None = None
    # The node account's email as the provider reports it (status.atProvider.email); needed for its
    # IAM members when the project is not named.
    observed_service_account_email: str | None = None


def gke_foundation(inputs: GKEInputs, namer: Namer, provider_config: dict[str, str]) -> Foundation:
    build = ResourceBuilder(namer, provider_config)
    out = Foundation()
    project = {"project": inputs.project} if inputs.project else {}

    # ---- network
    if inputs.network or inputs.subnetwork:
        out.cluster_fields.update({k: v for k, v in (("network", inputs.network),
                                                     ("subnetwork", inputs.subnetwork)) if v})
    else:
        out.resources["network"] = build.resource(COMPUTE, "Network", "network", {
            **project, "autoCreateSubnetworks": False})
        out.resources["subnetwork"] = build.resource(COMPUTE, "Subnetwork", "subnetwork", {
            **project, "region": inputs.region, "networkRef": build.ref("network"), "ipCidrRange": NODE_CIDR,
            "secondaryIpRange": [dict(POD_RANGE), dict(SERVICE_RANGE)], "privateIpGoogleAccess": True})
        out.cluster_fields.update({
            "networkRef": build.ref("network"), "subnetworkRef": build.ref("subnetwork"),
            "ipAllocationPolicy": {"clusterSecondaryRangeName": POD_RANGE["rangeName"],
                                   "servicesSecondaryRangeName": SERVICE_RANGE["rangeName"]}})

    # ---- the APIs the cluster's storage calls
    out.resources[FILESTORE_API_KEY] = build.resource(CLOUDPLATFORM, "ProjectService", FILESTORE_API_KEY,
                                                      {**project, **FILESTORE_API})

    # ---- the nodes' identity
    if inputs.service_account:
        node_account = {"serviceAccount": inputs.service_account}
    else:
        account = account_id(namer("service-account"))
        out.resources["service-account"] = build.resource(
            CLOUDPLATFORM, "ServiceAccount", "service-account",
            {**project, "displayName": f"inferplane nodes of cluster {inputs.name}"}, external_name=account)
        node_account = {"serviceAccountRef": build.ref("service-account")}
        email = inputs.observed_service_account_email or (
            ACCOUNT_EMAIL.format(account=account, project=inputs.project) if inputs.project else None)
        # The member names the account by email, which needs the project: named, or read back from
        # the account once it exists. Until then the members wait.
        if email:
            member_project = inputs.project or email.split("@", 1)[1].split(".", 1)[0]
            for short, role in NODE_ROLES.items():
                key = f"iam-member-{short}"
                out.resources[key] = build.resource(CLOUDPLATFORM, "ProjectIAMMember", key, {
                    "project": member_project, "role": role, "member": f"serviceAccount:{email}"})
    for pool in inputs.pools:
        out.pool_fields[pool] = {"nodeConfig": {**node_account, "oauthScopes": list(NODE_OAUTH_SCOPES)}}
    return out

"""inferplane: a fleet-level inference control plane."""

import os
from pathlib import Path

API_GROUP = "inferplane.dev"
INFRA_GROUP = f"infrastructure.{API_GROUP}"
API_VERSION = "v1alpha1"

# One file or standard input of manifests is held whole while it is admitted (kubectl sets no limit; its
# API server refuses what etcd would not store, object by object). bench/fleet_bench.py writes one file
# per object; its 10,000 clusters with their 1,000 ModelDeployments written as one file would be 4.9 MiB
# and 11,015 documents: these stand well above that. Here, not in admission, because the command line
# names them in its help without importing admission.
MAX_STREAM_BYTES = 64 * 1024 * 1024
MAX_DOCUMENTS = 50_000
STREAM_BYTES_FLAG, STREAM_BYTES_ENV = "--max-file-bytes", "INFERPLANE_MAX_FILE_BYTES"
DOCUMENTS_FLAG, DOCUMENTS_ENV = "--max-documents", "INFERPLANE_MAX_DOCUMENTS"

# Where a command's state lives. Here, not in the engine, because `validate` looks for a state without
# importing the engine (a loop of validates pays every import).
DEFAULT_STATE = Path(".inferplane")
STATE_ENV = "INFERPLANE_STATE"

# The vendored definitions, charts and CRDs the package reads (generated, not code).
DATA = Path(__file__).parent / "data"
# The Kubernetes release whose API is served (its version, its OpenAPI) and whose definitions are vendored.
KUBERNETES_RELEASE = "v1.37.0"


def state_dir(option: Path | None) -> Path:
    """--state wins, then $INFERPLANE_STATE, then ./.inferplane."""
    if option is not None:
        return option
    return Path(os.environ[STATE_ENV]) if os.environ.get(STATE_ENV) else DEFAULT_STATE

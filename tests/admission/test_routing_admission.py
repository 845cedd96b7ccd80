"""Bad gateways, endpoints and services: each gets its exact, actionable error, all at once."""

import subprocess
import sys

from inferplane.admission import admit_paths

BAD = """\
apiVersion: inferplane.dev/v1alpha1
kind: InferenceGateway
metadata: {name: default}
spec:
  backend: Traefik
  traefik: {version: "40.2.0", loadBalancer: MetalLB, metallb: {addressPool: "172.18.255.250-172.18.255.200"}}
---
apiVersion: inferplane.dev/v1alpha1
kind: InferenceGateway
metadata: {name: no-pool}
spec:
  backend: Traefik
  traefik: {loadBalancer: MetalLB}
---
apiVersion: inferplane.dev/v1alpha1
kind: InferenceGateway
metadata: {name: floating}
spec:
  backend: Traefik
  traefik: {version: "^40.0.0"}
---
apiVersion: inferplane.dev/v1alpha1
kind: ModelEndpoint
metadata: {name: ftp, namespace: ml-team}
spec: {url: "ftp://files.example.com/", rewritePath: "v1/"}
---
apiVersion: inferplane.dev/v1alpha1
kind: ModelEndpoint
metadata: {name: port, namespace: ml-team}
spec: {url: "http://10.0.0.1:99999/"}
---
apiVersion: inferplane.dev/v1alpha1
kind: ModelService
metadata: {name: weights, namespace: ml-team}
spec:
  endpoints:
  - {weight: 0, selector: {matchLabels: {inferplane.dev/deployment: a}}}
  - {weight: 1000001, selector: {matchLabels: {inferplane.dev/deployment: b}}}
  - {selector: {}}
---
apiVersion: inferplane.dev/v1alpha1
kind: ModelService
metadata: {name: empty, namespace: ml-team}
spec: {endpoints: []}
"""

EXPECTED = [
    "InferenceGateway/default: spec.traefik.metallb.addressPool: '172.18.255.250-172.18.255.200' ends before it "
    "starts: put the lower address first",
    "InferenceGateway/no-pool: spec.traefik: spec.traefik.metallb is required when spec.traefik.loadBalancer is "
    "MetalLB.",
    "InferenceGateway/floating: spec.traefik.version: must be a semantic version such as 1.2.3, got '^40.0.0' "
    "(Traefik Helm chart version, exact: a range would let the installed chart drift)",
    "ModelEndpoint/ftp: spec.url: must be an http:// or https:// URL: the control plane gateway forwards HTTP, e.g. "
    "https://api.together.xyz/",
    "ModelEndpoint/ftp: spec.rewritePath: must be an absolute path starting with /, e.g. / or /openai/: it replaces "
    "the service's prefix",
    "ModelEndpoint/port: spec.url: 'http://10.0.0.1:99999/' has a port that is not a number from 1 to 65535",
    "ModelService/weights: spec.endpoints[0].weight: must be at least 1, got 0: set it to 1 or more",
    "ModelService/weights: spec.endpoints[1].weight: must be at most 1000000, got 1000001: set it to 1000000 or less",
    "ModelService/weights: spec.endpoints[2].selector.matchLabels: required field is missing: add it",
    "ModelService/empty: spec.endpoints: must have at least 1 item",
]


def test_every_mistake_is_named_with_its_field_and_fix(tmp_path):
    path = tmp_path / "routing.yaml"
    path.write_text(BAD)
    result = admit_paths([path])
    assert [str(e).split(": ", 1)[1] for e in result.errors] == EXPECTED
    assert result.admitted == []


def test_validate_prints_them_without_a_traceback(tmp_path):
    (tmp_path / "routing.yaml").write_text(BAD)
    run = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "validate", "-f", str(tmp_path)],
                         capture_output=True, text=True)
    assert (run.returncode, "Traceback" in run.stderr) == (1, False)
    assert run.stderr.strip().splitlines()[-1] == "0 valid, 10 errors"

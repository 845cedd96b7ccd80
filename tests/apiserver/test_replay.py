"""A deletion refused because the object is in use is recorded on it and done once its users are gone
(Crossplane's Usage replayDeletion), by the server that recorded it or, after a restart, the next one;
whoever removes the users (here `inferplane delete`, another process)."""

from __future__ import annotations

import subprocess

from served import INFERPLANE, rewritten, start

def test_a_recorded_deletion_outlives_the_server_that_recorded_it(tmp_path):
    state = tmp_path / "state"
    folder = rewritten(tmp_path / "flow", ["eks/platform.yaml"])
    first = start(state, tmp_path / "first")
    try:
        first.kubectl("apply", "-f", str(folder))
        refused = first.kubectl("delete", "iclass", "l4-1x-g6", "--cascade=foreground", code=1)
        assert "is in use by inferencecluster.inferplane.dev/eks-us-east" in refused.stderr
        # The attempt is on the object, with its propagation policy, as Crossplane's webhook records it.
        recorded = first.kubectl("get", "iclass", "l4-1x-g6", "-o", "jsonpath={.metadata.annotations.usage\\."
                                 "crossplane\\.io/deletion-attempt-with-policy}").stdout
        assert recorded == "Foreground"
    finally:
        first.stop()
    second = start(state, tmp_path / "second")
    try:
        subprocess.run([*INFERPLANE, "delete", "icluster", "eks-us-east", "--state", str(state)], check=True,
                       capture_output=True)
        second.kubectl("wait", "--for=delete", "iclass/l4-1x-g6", "--timeout=120s")
    finally:
        log = second.stop()
    assert "replayed the deletion of inferenceclass.inferplane.dev/l4-1x-g6: its users are gone" in log

"""ModelDeployment composition of a replica whose pool vanished while a cluster it could go to is still coming up
(issue 29, item 5): composed exactly as it runs, named in the Scheduled line and in `why`/`describe`, and the
deployment watches the awaited cluster so that it is placed afresh once that cluster is up."""

from inferplane.compose.model_deployment import compose_model_deployment, explain, verdict
from test_deployment_placement import READY, cluster, composed, deployment, full_request, replica_on, scheduled

# lab lost pool `old` (its replica 0 ran there); `new` was just created: no Ready condition yet, no pools published.
B = cluster("lab", [("mi325x", "mi325x", 2)])
COMING_UP = cluster("new", [], conditions=[])
RUNNING = [replica_on("lab", 0, pool="old"), replica_on("lab", 1)]
OBSERVED = {f"replica-lab-{r['metadata']['labels']['inferplane.dev/replica-index']}": r for r in RUNNING}


def test_a_replica_whose_pool_vanished_is_kept_as_it_runs_while_a_cluster_comes_up():
    request = full_request(deployment(replicas=2), [B, COMING_UP], RUNNING, OBSERVED)
    response = compose_model_deployment(request)
    assert composed(response) == [("replica-lab-0", "qwen-lab-0", "lab", ["old"]),
                                  ("replica-lab-1", "qwen-lab-1", "lab", ["mi325x"])]
    assert response.desired["replica-lab-0"].resource["spec"] == RUNNING[0]["spec"]
    line = ("2 of 2 replicas placed on lab; 1 whose pool is gone or no longer matches kept as it runs until new "
            "is up")
    assert scheduled(response) == ("True", "Scheduled", f"ModelDeployment qwen: {line}")
    kept = "replica 0 on lab: vllm on pool old (kept as it runs: pool old is gone; placed afresh once new is up)"
    assert verdict(request) == [line, kept, "replica 1 on lab: vllm on pool mi325x"]
    assert explain(request)[1] == f"  {kept}"
    # Every replica is placed, so it watches only its hosts: and the cluster it waits for.
    assert response.requirements["clusters"].watch == frozenset({("", "lab"), ("", "new")})


def test_once_the_cluster_is_up_the_replica_is_placed_afresh_there():
    up = cluster("new", [("mi325x", "mi325x", 2)], conditions=READY)
    response = compose_model_deployment(full_request(deployment(replicas=2), [B, up], RUNNING, OBSERVED))
    assert composed(response) == [("replica-lab-1", "qwen-lab-1", "lab", ["mi325x"]),
                                  ("replica-new-0", "qwen-new-0", "new", ["mi325x"])]
    assert scheduled(response)[2] == "ModelDeployment qwen: 2 of 2 replicas placed on lab, new"

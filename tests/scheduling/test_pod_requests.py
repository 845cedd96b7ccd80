"""A simulation reads a workload's pod requests once in a row through its own memo (PodRequests), never
through a cache hidden in the module: another memo, or none, reads the pod afresh."""

from inferplane.scheduling.predicates import NodeInfo, NodeResourcesFit, PodRequests, pod_requests


def pod(cpu):
    return {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}


def node():
    return {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}


def test_a_memo_reads_shared_containers_once_and_other_containers_afresh():
    memo = PodRequests()
    small, large = pod("100m"), pod("2")
    shared = {**small, "nodeName": "n1"}  # another pod over the same containers
    first = memo(small)
    assert memo(shared) is first and str(first["cpu"]) == "1/10"
    assert str(memo(large)["cpu"]) == "2"
    info = NodeInfo(node(), requests_of=memo)
    assert NodeResourcesFit().filter(small, info) == [] and NodeResourcesFit().filter(large, info) == ["Insufficient cpu"]


def test_without_a_memo_every_read_is_fresh():
    small = pod("100m")
    assert pod_requests(small) is not pod_requests(small)
    info = NodeInfo(node())
    info.bind(small)
    info.bind(small)
    assert str(info.requested["cpu"]) == "1/5"

"""Composed names: readable, within Kubernetes' limits, never the same for different owners and parts."""

import re

from inferplane.api.managed import composed_name


def test_a_composed_name_is_its_parts_and_a_hash():
    assert composed_name("c1", "gpu") == "c1-gpu-1af500eb1109"


def test_parts_that_join_alike_get_different_names():
    assert composed_name("a", "b-c") == "a-b-c-46d64d02070d"
    assert composed_name("a-b", "c") == "a-b-c-2971aa165b65"


def test_the_scope_enters_the_hash_only():
    assert composed_name("c1", "gpu", scope="EKSCluster") != composed_name("c1", "gpu")
    assert composed_name("c1", "gpu", scope="EKSCluster").startswith("c1-gpu-")


def test_a_long_name_is_cut_to_63_characters_and_stays_a_dns_label():
    name = composed_name("a" * 63, "b" * 40)
    assert len(name) == 63
    assert re.fullmatch(r"a{50}-[0-9a-f]{12}", name)
    # A cut that ends on the separator drops it: never "--".
    assert re.fullmatch(r"a{49}-[0-9a-f]{12}", composed_name("a" * 49, "bc"))

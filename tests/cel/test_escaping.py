"""Kubernetes' CEL escaping: a property named by a CEL reserved word is reached as `__<word>__`, as the
provider CRDs' rules on a `namespace` field read it (eks PodIdentityAssociation)."""

from inferplane.admission.structural import plan_for, rule_failures
from inferplane.cel.rules import Document

RULE = "has(self.forProvider.__namespace__)"
SCHEMA = {"type": "object", "x-kubernetes-validations": [{"rule": RULE, "message": "namespace is required"}],
          "properties": {"forProvider": {"type": "object", "properties": {"namespace": {"type": "string"}}}}}


def test_a_reserved_word_property_is_read_by_its_escaped_name():
    assert Document({"forProvider": {"namespace": "kube-system"}}, escape=True).check(RULE, ())
    assert not Document({"forProvider": {}}, escape=True).check(RULE, ())


def test_only_a_schema_whose_rules_read_an_escaped_name_binds_the_document_escaped():
    plan = plan_for(SCHEMA)
    assert plan.escapes and not plan_for({"type": "object", "x-kubernetes-validations": [
        {"rule": "has(self.name)"}]}).escapes
    assert rule_failures(plan, {"forProvider": {"namespace": "kube-system"}}, []) == []
    assert rule_failures(plan, {"forProvider": {}}, []) == [("", "namespace is required")]

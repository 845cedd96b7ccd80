"""Reading a stored InferenceClass, as every composition function that needs one does."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from pydantic import ValidationError

from inferplane.api.inference_class import InferenceClass, read_class

CLASS = Path(__file__).resolve().parents[2] / "recipes" / "qwen2.5-0.5b-nvidia-eks" / "class.yaml"


def test_a_class_is_validated_once_per_content_and_shared():
    stored = yaml.safe_load(CLASS.read_text())
    first = read_class(stored)
    assert isinstance(first, InferenceClass)
    assert first.spec.claimed_drivers() == ["gpu.nvidia.com"]
    assert read_class(copy.deepcopy(stored)) is first

    bigger = copy.deepcopy(stored)
    bigger["spec"]["provisioning"]["eks"]["instanceType"] = "g6.2xlarge"
    other = read_class(bigger)
    assert other is not first
    assert other.spec.provisioning.machine().instance_type == "g6.2xlarge"


def test_an_invalid_class_says_why_every_time():
    stored = yaml.safe_load(CLASS.read_text())
    stored["spec"]["devices"] = []
    for _ in range(2):
        error = read_class(stored)
        assert isinstance(error, ValidationError)
        assert [(e["loc"], e["type"]) for e in error.errors()] == [(("spec", "devices"), "too_short")]
    assert isinstance(read_class(None), ValidationError)

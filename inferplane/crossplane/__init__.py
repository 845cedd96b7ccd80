"""Crossplane runtime: the generated XRDs (and later the function server and package)."""

from pathlib import Path

XRD_DIR = Path(__file__).parent / "xrds"

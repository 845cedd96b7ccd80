"""Crossplane runtime: the generated XRDs and what an API server publishes of them (`openapi.py`; and of
the provider configs and core kinds stored, `stored_openapi.py`), the
RunFunction server (`function.py`) and the Configuration package (`package.py`)."""

from pathlib import Path

XRD_DIR = Path(__file__).parent / "xrds"

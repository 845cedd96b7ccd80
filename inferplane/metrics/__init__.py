"""Vendor-neutral GPU metrics: the `inferplane_gpu_*` series, the built-in mappings from each
vendor's exporter to them, the recording rules they render to, and the serving stack's scrape jobs."""

"""Routing: the control plane gateway, endpoints and services as Gateway API objects, and how a
request travels through them (matching, weights, rewrites)."""

"""The embedded engine as users drive it: admission, then the runtime with inferplane's functions, the
simulator and the usage rules (runtime.py); the audits of a state or a folder (audit.py)."""

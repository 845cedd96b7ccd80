"""The embedded engine as users drive it: the control plane (control_plane.py), admission, then the
controller runtime with inferplane's functions, the simulator and the usage rules (embedded.py), its
parts each in a module (apply_sets.py, ownership.py, lease_wait.py, in_use.py); the audits of a state
or a folder (audit.py)."""

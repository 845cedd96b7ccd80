"""The embedded controller runtime: store, indexed cache, work queue, lease and reconciler. It knows no
kind of ours: kinds come with their composition functions and what they watch, and further
controllers (the simulator) are hosted beside them."""

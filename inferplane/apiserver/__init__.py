"""The Kubernetes API over the embedded engine's state (`inferplane serve`), for kubectl and client
libraries: discovery, OpenAPI v3, get/list/watch, create/update/patch/delete, Table output and Status
errors, as kube-apiserver answers them. Writes go through the engine's admission and wake its
reconciler; the server holds no state of its own but the watch's recent history."""

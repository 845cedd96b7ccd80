"""Server-side apply's field ownership, as Kubernetes keeps it: which field manager owns which fields of
an object (`metadata.managedFields`, in the FieldsV1 form), the merge of an applied configuration into
the live object by the schema's list types, conflicts, and the removal of fields a manager stops
applying. After sigs.k8s.io/structured-merge-diff (v6: fieldpath, typed, merge) and k8s.io/apiserver
pkg/endpoints/handlers/fieldmanager (v0.37.0); our own code (no maintained Python implementation of
structured-merge-diff is published on PyPI)."""

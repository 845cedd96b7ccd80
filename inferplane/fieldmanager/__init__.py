"""Server-side apply's field ownership, as Kubernetes keeps it: which field manager owns which fields of
an object (`metadata.managedFields`, in the FieldsV1 form), the merge of an applied configuration into
the live object by the schema's list types, conflicts, and the removal of fields a manager stops
applying. After sigs.k8s.io/structured-merge-diff (v6: fieldpath, typed, merge; read at v6.4.2, the
version k8s.io/apimachinery v0.37.0-beta.0 requires) and the API server's field manager, which lives in
k8s.io/apimachinery pkg/util/managedfields/internal (read at v0.37.0-beta.0; k8s.io/apiserver
pkg/endpoints/handlers/fieldmanager now keeps only its admission and equality checks); our own code (no
maintained Python implementation of structured-merge-diff is published on PyPI)."""

"""Rendering: the model to plain Kubernetes objects, laid out as a kustomize tree."""

from fleetgen.output.emit import dump_documents, markdown_document
from fleetgen.render.layout import OutputFile, cluster_objects, plan
from fleetgen.render.manifest import Manifest, ObjectKey

__all__ = ["Manifest", "ObjectKey", "OutputFile", "cluster_objects", "files_of", "plan"]


def files_of(outputs: list[OutputFile], source_name: str = "fleet.yaml") -> dict[str, bytes]:
    """The bytes of planned files, keyed by relative path."""
    return {
        f.path: markdown_document(f.markdown, source_name)
        if f.markdown is not None
        else dump_documents([m.body for m in f.manifests], source_name)
        for f in outputs
    }

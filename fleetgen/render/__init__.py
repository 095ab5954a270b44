"""Rendering: the model to plain Kubernetes objects, laid out as a kustomize tree."""

from fleetgen.emit import dump_documents, markdown_document
from fleetgen.model import Fleet
from fleetgen.render.layout import OutputFile, cluster_objects, plan
from fleetgen.render.manifest import Manifest

__all__ = ["Manifest", "OutputFile", "cluster_objects", "files_of", "plan", "render_files"]


def render_files(fleet: Fleet, source_name: str = "fleet.yaml") -> dict[str, bytes]:
    """Every generated file of the tree as its final bytes, keyed by relative path."""
    return files_of(plan(fleet), source_name)


def files_of(outputs: list[OutputFile], source_name: str = "fleet.yaml") -> dict[str, bytes]:
    """The bytes of planned files (for callers that need the plan too)."""
    return {
        f.path: markdown_document(f.markdown, source_name)
        if f.markdown is not None
        else dump_documents([m.body for m in f.manifests], source_name)
        for f in outputs
    }

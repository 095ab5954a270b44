"""Rendering: the model to plain Kubernetes objects, laid out as a kustomize tree (no bytes: output emits them)."""

from fleetgen.render.layout import OutputFile, cluster_objects, plan
from fleetgen.render.manifest import Manifest, ObjectKey

__all__ = ["Manifest", "ObjectKey", "OutputFile", "cluster_objects", "plan"]

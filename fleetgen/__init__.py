"""fleetgen: one typed fleet.yaml in, validated kustomize trees for a GPU Kubernetes fleet out."""

__version__ = "0.1.0"

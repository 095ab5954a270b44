"""Rendered objects against what the API server and the GitOps engine would check.

Schemas per Kubernetes version, CRD schemas with their CEL rules, the API server's Go rules, policy
lints, and whether the engine will reconcile the planned tree.
"""

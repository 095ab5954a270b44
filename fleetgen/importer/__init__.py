"""`fleetgen import`: a hand-written kustomize fleet repository in, a commented fleet.yaml out.

build.py runs `kubectl kustomize` on each cluster; recognise.py maps the built objects to what the
model holds; infer.py derives teams, placements, overrides and queues; verify.py renders the result
and compares it with what the repository builds to; keep.py turns the objects it cannot express
into hand-written files (--keep-unmodelled); write.py emits the commented fleet.yaml.
"""

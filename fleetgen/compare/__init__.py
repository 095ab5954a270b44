"""Comparing Kubernetes objects as the API server would: by value, not by spelling.

One comparison for every stage that asks "is this the same object?": `check` (tree against a fresh
render), `diff` (two revisions), `drift` (Git against the cluster), `import` (a hand-written tree
against what fleet.yaml renders) and `explain`. Lists of named items match by name, quantities by
value, and a field's absence matches its API default (semantics.py).
"""

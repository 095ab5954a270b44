"""The rendered tree on disk: canonical YAML bytes, the ledger, atomic writes, safe prune, and freshness."""

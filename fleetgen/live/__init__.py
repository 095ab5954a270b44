"""Live clusters: kubectl, dumps read as untrusted input, and drift against the render."""

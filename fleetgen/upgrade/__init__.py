"""Canary upgrades: plan (pure), apply (rewrites fleet.yaml, keeping its layout), status."""

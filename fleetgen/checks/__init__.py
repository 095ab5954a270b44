"""Rules across the model: names, cross-references, capacity, sharing, SLOs, secrets; and the load that runs them."""

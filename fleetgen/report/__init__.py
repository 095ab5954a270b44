"""What fleetgen tells people: findings, the capacity and cost report, and where each rendered field comes from."""

"""Reading fleet.yaml: YAML text to values with the position of every node, git revisions, edits in place."""

"""`job new`: the golden paths a data scientist starts from, placed where Kueue would admit them.

A command of its own, above the stages it uses: it resolves a team's ask to a cluster, queue and
pool (job_target, slice_asks), builds the pod (job_pod) and the objects of each path
(golden_paths, serving), and checks them as the cluster would before anything is printed.
"""

"""`fleetgen forecast`: when each cluster, node pool and team quota runs out of GPUs, from the history of GPUs in use.

range_answer reads Prometheus range-query answers one series at a time; history says which subject a series
is about and keeps its hourly sums; trend fits the weekly linear trend and its interval; build puts them
together against fleet.yaml's capacities and lead time; output and chart print it as text, JSON and HTML.
"""

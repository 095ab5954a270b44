"""GPU allocation history from a live Prometheus (or anything that answers its HTTP API: Thanos, Mimir).

Three range queries, one point an hour, each answer streamed to the reader rather than held whole: the
GPUs Kueue has admitted per cluster and node pool (a pool is its ResourceFlavor; the leader's copy,
as the alerts count it), the GPUs each namespace's quota counts as used (kube-state-metrics), and
each cluster's average GPU utilisation (the DCGM exporter), labelled as utilisation.
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from fleetgen.errors import InputError

STEP_SECONDS = 3600
TIMEOUT_SECONDS = 60
QUERIES = (
    'sum by (cluster, flavor) (kueue_cluster_queue_resource_usage{resource="nvidia.com/gpu", replica_role!="follower"})',
    'sum by (cluster, namespace) (kube_resourcequota{resource="requests.nvidia.com/gpu", type="used"})',
    # label_replace with an empty source and regex sets the label on every series: it marks them as utilisation
    'label_replace(avg by (cluster) (DCGM_FI_DEV_GPU_UTIL), "fleetgen_series", "gpu_busy_percent", "", "")',
)


def query_url(base: str, query: str, start: int, end: int) -> str:
    if urllib.parse.urlsplit(base).scheme not in ("http", "https"):
        raise InputError(f"--prometheus {base}: an http:// or https:// URL")
    params = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": STEP_SECONDS})
    return f"{base.rstrip('/')}/api/v1/query_range?{params}"


@contextmanager
def range_answer(base: str, query: str, start: int, end: int) -> Iterator[IO[str]]:
    """The answer to one range query, as a text stream; InputError when the server cannot be reached or refuses."""
    url = query_url(base, query, start, end)
    try:
        response = urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS)
    except urllib.error.HTTPError as exc:
        raise InputError(f"{base}: the query was refused ({exc.code}): {_reason(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(f"{base}: cannot reach Prometheus: {getattr(exc, 'reason', exc)}") from None
    with response:
        yield io.TextIOWrapper(response, encoding="utf-8")


REASON_CHARACTERS = 300


def _reason(exc: urllib.error.HTTPError) -> str:
    """Prometheus' own error text (`{"status": "error", "error": ...}`), else the HTTP reason; one line, cut short."""
    try:
        body = json.loads(exc.read(65536) or b"{}")
    except (ValueError, OSError, RecursionError):  # not JSON, cut off, or nested deeper than json reads
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    text = " ".join(str(error if isinstance(error, str) and error else exc.reason).split())  # no line breaks of any kind
    return text if len(text) <= REASON_CHARACTERS else text[:REASON_CHARACTERS] + "..."

"""`fleetgen forecast` on the command line: files, a live Prometheus API on 127.0.0.1, text, JSON and HTML in a browser."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import html5lib
import pytest
from conftest import EXAMPLE, REPO, installed

sys.path.insert(0, str(REPO / "benchmarks"))
from synth_history import answer_text, gpus_in_use

Run = Callable[..., subprocess.CompletedProcess[str]]
DAYS = 90
POOL = {"cluster": "training-eastus", "flavor": "a100-spot", "resource": "nvidia.com/gpu"}
H100 = {"cluster": "training-eastus", "flavor": "h100-ondemand", "resource": "nvidia.com/gpu"}
NLP = {"cluster": "training-eastus", "namespace": "team-nlp"}


def history(tmp_path: Path, per_week: float) -> Path:
    """a100-spot growing `per_week` from 8 of 16 GPUs; the H100s flat at 4; nlp growing slowly."""
    series = [
        (POOL, gpus_in_use(DAYS * 24, 8, per_week, weekly=2, noise=0.5, seed=1)),
        (H100, gpus_in_use(DAYS * 24, 4, 0.0, noise=0.5, seed=2)),
        (NLP, gpus_in_use(DAYS * 24, 3, 0.1, noise=0.2, seed=3)),
    ]
    path = tmp_path / "history.json"
    path.write_text(answer_text(series))
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    return path


def test_a_pool_that_runs_out_inside_the_lead_time_exits_1(tmp_path: Path, cli_run: Run) -> None:
    history(tmp_path, per_week=1.0)  # eight weeks to go
    done = cli_run("forecast", "--history", "history.json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    flagged = [line for line in done.stdout.splitlines() if line.startswith("!")]
    assert any("training-eastus pool a100-spot" in line for line in flagged)
    assert not any("h100-ondemand" in line for line in flagged)
    assert "may run out inside the lead time (12 weeks)" in done.stderr
    assert "No history for" in done.stdout and "prod-inference-eastus pool a100-reserved" in done.stdout


def test_nothing_inside_the_lead_time_exits_0_and_json_is_the_same_each_run(tmp_path: Path, cli_run: Run) -> None:
    history(tmp_path, per_week=0.2)  # forty weeks to go
    first = cli_run("forecast", "--history", "history.json", "--format", "json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert cli_run("forecast", "--history", "history.json", "--format", "json", cwd=tmp_path).stdout == first.stdout
    data = json.loads(first.stdout)
    rows = {(s["kind"], s["name"]): s for s in data["subjects"]}
    spot = rows[("pool", "a100-spot")]
    assert spot["status"] == "runs-out" and not spot["insideLeadTime"] and spot["capacityGpus"] == 16
    assert spot["runsOut"]["earliest"] <= spot["runsOut"]["expected"] <= spot["runsOut"]["latest"]
    assert rows[("team", "nlp")]["capacityGpus"] == 8 and data["leadTimeWeeks"] == 12 and data["confidence"] == 0.9


def test_bad_history_is_one_line_with_its_position_and_exit_2(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    (tmp_path / "history.json").write_text(
        '{"status": "success", "data": {"resultType": "matrix", "result": [\n  {"metric": {}, "values": [[1, '
    )
    done = cli_run("forecast", "--history", "history.json", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("fleetgen: history.json:2:33: data.result[0]: not JSON") and done.stderr.count("\n") == 1
    (tmp_path / "history.json").write_text(answer_text([(POOL, gpus_in_use(DAYS * 24, 8, 0.0) - 1008)]))
    negative = cli_run("forecast", "--history", "history.json", cwd=tmp_path)
    assert negative.returncode == 2 and negative.stderr.count("\n") == 1
    assert negative.stderr.startswith("fleetgen: history.json:1:61: data.result[0].values: -1000 is not a number of GPUs in use")
    missing = cli_run("forecast", "--history", "nowhere.json", cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (2, "fleetgen: nowhere.json: cannot read: No such file or directory\n")
    assert cli_run("forecast", cwd=tmp_path).returncode == 2


class _Prometheus(BaseHTTPRequestHandler):
    """Answers /api/v1/query_range like Prometheus: GPUs by flavor, or used quota by namespace; remembers each query."""

    asked: list[dict[str, str]]
    answers: dict[str, str]

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        self.asked.append({"path": url.path, **query})
        if url.path != "/api/v1/query_range":
            self.send_error(404)
            return
        body = self.answers[next(key for key in ("flavor", "namespace", "DCGM") if key in query["query"])].encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A Prometheus API on 127.0.0.1 (a free port) for one test; it stops when the test ends, and no request waits over 10 s."""
    asked: list[dict[str, str]] = []
    pools = [({k: v for k, v in POOL.items() if k != "resource"}, gpus_in_use(DAYS * 24, 8, 1.0, weekly=2))]  # no cluster label
    busy = [({"fleetgen_series": "gpu_busy_percent"}, gpus_in_use(DAYS * 24, 50, 2.0, weekly=10))]  # 25 weeks to 100%
    answers = {"flavor": answer_text(pools), "namespace": answer_text([]), "DCGM": answer_text(busy)}
    handler = type("Handler", (_Prometheus,), {"asked": asked, "answers": answers, "timeout": 10})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_the_live_path_asks_prometheus_for_90_days_hourly(
    tmp_path: Path, cli_run: Run, prometheus: tuple[str, list[dict[str, str]]]
) -> None:
    url, asked = prometheus
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    done = cli_run("forecast", "--prometheus", f"training-eastus={url}", "--format", "json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # eight weeks to go on a100-spot
    assert [a["path"] for a in asked] == ["/api/v1/query_range"] * 3
    assert "kueue_cluster_queue_resource_usage" in asked[0]["query"] and "kube_resourcequota" in asked[1]["query"]
    assert "DCGM_FI_DEV_GPU_UTIL" in asked[2]["query"] and '"fleetgen_series", "gpu_busy_percent"' in asked[2]["query"]
    for query in asked:
        assert int(query["end"]) - int(query["start"]) == DAYS * 86400 and query["step"] == "3600"
    rows = {(s["kind"], s["name"]): s for s in json.loads(done.stdout)["subjects"]}
    assert rows[("pool", "a100-spot")]["insideLeadTime"]
    busy = rows[("busy", "training-eastus")]
    assert busy["capacityGpus"] == 100 and busy["status"] == "runs-out" and not busy["insideLeadTime"]


def test_an_unreachable_or_refusing_prometheus_is_one_line_and_exit_2(
    tmp_path: Path, cli_run: Run, prometheus: tuple[str, list[dict[str, str]]]
) -> None:
    url, _ = prometheus
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    refused = cli_run("forecast", "--prometheus", f"{url}/nothing-here", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.startswith(f"fleetgen: {url}/nothing-here: the query was refused (404)")
    closed = cli_run("forecast", "--prometheus", "http://127.0.0.1:9", cwd=tmp_path)
    assert closed.returncode == 2 and "cannot reach Prometheus" in closed.stderr and closed.stderr.count("\n") == 1
    assert cli_run("forecast", "--prometheus", "file:///etc/passwd", cwd=tmp_path).returncode == 2


def test_the_html_chart_is_valid_and_draws_in_a_headless_browser(tmp_path: Path, cli_run: Run) -> None:
    history(tmp_path, per_week=1.0)
    done = cli_run("forecast", "--history", "history.json", "--format", "html", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    page = done.stdout
    html5lib.HTMLParser(strict=True).parse(page)  # raises on any HTML error
    charts = page.count("<svg")
    assert charts == 4  # a chart for each row with history: training-eastus, its a100-spot and h100-ondemand pools, nlp there
    assert page.index("training-eastus pool a100-spot") < page.index("training-eastus pool h100-ondemand")  # flagged first
    browser = installed(
        "no headless Chromium here (.ci/run installs Debian's chromium); the HTML was checked above", "chromium", "chromium-browser"
    )
    (tmp_path / "forecast.html").write_text(page)
    shot = tmp_path / "forecast.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    flags.append(f"--user-data-dir={tmp_path / 'profile'}")
    subprocess.run(
        [browser, *flags, f"--screenshot={shot}", "--window-size=1200,900", (tmp_path / "forecast.html").as_uri()],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert shot.exists() and shot.stat().st_size > 10_000  # charts and a table were drawn
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", (tmp_path / "forecast.html").as_uri()], capture_output=True, text=True, timeout=120, check=False
    ).stdout
    assert dom.count("<svg") == charts and dom.count("<polygon") == charts and "a100-spot" in dom


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"status": "error", "error": "parse error:\\nunexpected \\u2028 character"}', "parse error: unexpected character"),
        (b"[" * 100_000, "Bad Request"),  # nested deeper than json reads
        (b'{"status": "error", "error": {"nested": 1}}', "Bad Request"),
        (b"\xff\xfe not json", "Bad Request"),
        (b'{"error": "' + b"x" * 1000 + b'"}', "x" * 300 + "..."),
    ],
)
def test_what_a_refusing_prometheus_says_is_one_short_line(body: bytes, reason: str) -> None:
    import io
    import urllib.error
    from email.message import Message

    from fleetgen.live.prometheus import _reason

    refused = urllib.error.HTTPError("http://127.0.0.1:9090/api/v1/query_range", 400, "Bad Request", Message(), io.BytesIO(body))
    assert _reason(refused) == reason

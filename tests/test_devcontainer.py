"""`fleetgen team devcontainer`: a devcontainer.json the Dev Container schema accepts, on the CUDA of the cluster's row."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fleetgen.authoring.devcontainer import devcontainer
from fleetgen.checks.admission import room
from fleetgen.checks.load import load_fleet_text
from fleetgen.compat.cuda_images import cuda_images
from fleetgen.errors import FindingsError, RefusedAsk
from fleetgen.model import Version
from tests.conftest import EXAMPLE, REPO

Run = Callable[..., subprocess.CompletedProcess[str]]
SCHEMA = json.loads((REPO / "tests" / "devcontainer" / "devContainer.base.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft201909Validator(SCHEMA)
FLEET = load_fleet_text(EXAMPLE.read_bytes()).fleet


def test_every_teams_devcontainer_on_every_cluster_passes_the_dev_container_schema() -> None:
    written = 0
    for team in FLEET.teams:
        for cluster in team.clusters:
            document = devcontainer(FLEET, team.name, cluster)
            assert list(VALIDATOR.iter_errors(document)) == [], (team.name, cluster)
            versions = FLEET.version_sets[next(c for c in FLEET.clusters if c.name == cluster).version_set]
            assert f":{versions.cuda}." in document["image"]  # the CUDA minor of the cluster's matrix row
            assert document["hostRequirements"]["gpu"] is True and document["runArgs"] == ["--gpus", "all"]
            written += 1
    assert written == 9


def test_the_schema_check_can_fail() -> None:
    document: dict[str, Any] = devcontainer(FLEET, "nlp", "dev-eastus")
    wrong = {**document, "hostRequirements": {**document["hostRequirements"], "memory": "20 GiB"}}
    assert [e.message for e in VALIDATOR.iter_errors(wrong)]


def test_each_image_row_names_its_cuda_minor_and_its_source() -> None:
    for row in cuda_images().images:
        assert f":{row.cuda}." in row.image and row.source and row.url.startswith("https://")


def test_the_cli_writes_the_file_and_keeps_a_different_one(cli_run: Run, tmp_path: Path) -> None:
    done = cli_run("team", "devcontainer", "nlp", "--cluster", "training-eastus", "--fleet", str(EXAMPLE), "--dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    target = tmp_path / ".devcontainer" / "devcontainer.json"
    assert json.loads(target.read_text()) == devcontainer(FLEET, "nlp", "training-eastus")
    assert "nvcr.io/nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04" in done.stderr  # prod-2024q4: CUDA 12.4
    target.write_text("{}\n")
    kept = cli_run("team", "devcontainer", "nlp", "--cluster", "dev-eastus", "--fleet", str(EXAMPLE), "--dir", str(tmp_path))
    assert kept.returncode == 2 and "in the way" in kept.stderr and target.read_text() == "{}\n"
    forced = cli_run("team", "devcontainer", "nlp", "--cluster", "dev-eastus", "--fleet", str(EXAMPLE), "--dir", str(tmp_path), "--force")
    assert forced.returncode == 0 and "12.6.3" in target.read_text()


def test_a_devcontainer_json_that_is_not_utf8_is_a_different_file_in_the_way(cli_run: Run, tmp_path: Path) -> None:
    target = tmp_path / ".devcontainer" / "devcontainer.json"
    target.parent.mkdir()
    raw = '{"name": "caf\u00e9"}\n'.encode("latin-1")  # not UTF-8
    target.write_bytes(raw)
    ask = ("team", "devcontainer", "nlp", "--cluster", "dev-eastus", "--fleet", str(EXAMPLE), "--dir", str(tmp_path))
    kept = cli_run(*ask)
    assert kept.returncode == 2 and "in the way" in kept.stderr and kept.stderr.count("\n") == 1 and target.read_bytes() == raw
    forced = cli_run(*ask, "--force")
    assert forced.returncode == 0 and "12.6.3" in target.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["nobody", "--cluster", "dev-eastus"], 2, "fleetgen: TEAM nobody: no such team (known: data-science, nlp, robotics)"),
        (
            ["robotics", "--cluster", "prod-inference-eastus"],
            1,
            "fleetgen: team robotics is not on prod-inference-eastus; it is on training-eastus, dev-eastus",
        ),
    ],
)
def test_bad_asks_are_one_line(cli_run: Run, tmp_path: Path, args: list[str], code: int, message: str) -> None:
    done = cli_run("team", "devcontainer", *args, "--fleet", str(EXAMPLE), "--dir", str(tmp_path))
    assert done.returncode == code and done.stderr.strip() == message


def test_a_cuda_without_an_image_is_refused() -> None:
    dev = FLEET.version_sets["dev-2024q4"]
    rows = {**FLEET.version_sets, "dev-2024q4": dev.model_copy(update={"cuda": Version("12.7")})}
    with pytest.raises(RefusedAsk, match=r"^no CUDA image is known for CUDA 12.7 \(dev-eastus's version set dev-2024q4; known: 12.1, "):
        devcontainer(FLEET.model_copy(update={"version_sets": rows}), "nlp", "dev-eastus")


@pytest.mark.parametrize("cuda", ["12.8", "12.9"])
def test_cuda_12_8_and_12_9_have_their_cudnn_devel_image(cuda: str) -> None:
    # 12.8 is the first CUDA for Blackwell; NVIDIA publishes cuDNN devel images for both minors
    dev = FLEET.version_sets["dev-2024q4"]
    rows = {**FLEET.version_sets, "dev-2024q4": dev.model_copy(update={"cuda": Version(cuda), "driver": Version("580.82.07")})}
    document = devcontainer(FLEET.model_copy(update={"version_sets": rows}), "nlp", "dev-eastus")
    assert document["image"].startswith(f"nvcr.io/nvidia/cuda:{cuda}.") and "-cudnn-devel-ubuntu" in document["image"]
    assert not list(VALIDATOR.iter_errors(document))


def test_every_cuda_the_facts_know_has_an_image_or_validate_says_so() -> None:
    from fleetgen.compat.facts import facts

    imaged = {row.cuda.minor for row in cuda_images().images}
    for row in facts().cuda_driver:
        if row.cuda.minor in imaged:
            continue
        text = EXAMPLE.read_text().replace('    cuda: "12.6"', f'    cuda: "{row.cuda}"')
        try:
            findings = list(load_fleet_text(text.encode()).warnings)
        except FindingsError as refused:  # a CUDA the driver cannot run is refused anyway; that refusal says so too
            findings = refused.findings
        assert any("team devcontainer" in f.message and str(row.cuda) in f.message for f in findings), row.cuda


def test_a_team_on_a_multikueue_manager_gets_the_workers_gpu_share() -> None:
    text = (REPO / "tests" / "cases" / "multikueue-two-models" / "fleet.yaml").read_text()
    fleet = load_fleet_text(text.encode()).fleet
    document = devcontainer(fleet, "llm", "dispatch-eastus")  # llm submits to fleet-h100, which dispatches to training-eastus
    assert document["image"].startswith("nvcr.io/nvidia/cuda:13.0.")
    h100 = next(p for c in fleet.clusters for p in c.node_pools if p.gpu_model == "H100")
    assert document["hostRequirements"]["cpus"] == int(room(h100, "cpu") / h100.gpus_per_node)

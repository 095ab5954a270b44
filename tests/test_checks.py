"""One test per check: a small edit of the example fleet and the exact finding it must produce."""

from __future__ import annotations

import pytest
from conftest import EXAMPLE, findings_of, line_of, replace_once


def at(text: str, needle: str, token: str, nth: int = 1) -> str:
    """`line:col` of `token` on the nth line containing `needle`."""
    line = line_of(text, needle, nth)
    return f"{line}:{text.splitlines()[line - 1].index(token) + 1}"


def test_example_is_valid(example_text: str) -> None:
    assert findings_of(example_text) == []


CASES = [
    # (id, old, new, needle of the reported line ("needle#2": its second hit), token the column points at,
    #  expected "path: message")
    (
        "unknown-field",
        "        gpuModel: T4\n",
        "        gpuModel: T4\n        colour: red\n",
        "colour: red",
        "colour",
        "clusters[3].nodePools[0].colour: unknown field",
    ),
    (
        "wrong-type",
        "gpusPerNode: 8\n        cpuPerNode: 88",
        "gpusPerNode: eight\n        cpuPerNode: 88",
        "gpusPerNode: eight",
        "eight",
        "clusters[2].nodePools[2].gpusPerNode: Input should be a valid integer, got 'eight'",
    ),
    (
        "enum",
        "environment: dev",
        "environment: develop",
        "environment: develop",
        "develop",
        "clusters[3].environment: Input should be 'dev', 'staging' or 'production', got 'develop'",
    ),
    (
        "dns-1123",
        "  - name: robotics",
        "  - name: Robotics_Lab",
        "name: Robotics_Lab",
        "Robotics_Lab",
        "teams[2].name: 'Robotics_Lab' is not a DNS-1123 label (lowercase letters, digits and '-', "
        "starting and ending with a letter or digit, at most 63 characters)",
    ),
    (
        "dns-1123-map-key",
        "      dev-eastus:\n    priorityClasses",
        "      Dev-EastUS:\n    priorityClasses",
        "Dev-EastUS:",
        "Dev-EastUS",
        "teams[2].clusters.Dev-EastUS: 'Dev-EastUS' is not a DNS-1123 label (lowercase letters, digits and '-', "
        "starting and ending with a letter or digit, at most 63 characters)",
    ),
    (
        "quantity",
        "requests: {cpu: 32, memory: 128Gi, gpu: 4}",
        "requests: {cpu: 32, memory: 128GB, gpu: 4}",
        "memory: 128GB",
        "128GB",
        "teams[2].quota.requests.memory: '128GB' is not a Kubernetes quantity (e.g. 500m, 64, 256Gi, 1.5T); did you mean '128Gi'?",
    ),
    (
        "missing-field",
        "    costCenter: cc-5102\n",
        "",
        "  - name: robotics",
        "name",
        "teams[2].costCenter: required field is missing",
    ),
    (
        "quantity-by-value",
        "limits: {cpu: 64, memory: 256Gi}",
        "limits: {cpu: 64, memory: 100000Mi}",
        "limits: {cpu: 64, memory: 100000Mi",
        "100000Mi",
        "teams[2].quota.limits.memory: limit 100000Mi is below the request 128Gi",
    ),
    (
        "duplicate-name",
        "  - name: robotics",
        "  - name: nlp",
        "  - name: nlp#2",
        "nlp",
        f"teams[2].name: duplicate name 'nlp' (first at line {line_of(EXAMPLE.read_text(), '  - name: nlp')})",
    ),
    (
        "unknown-version-set",
        "versionSet: dev-2024q4",
        "versionSet: dev-2025q1",
        "versionSet: dev-2025q1",
        "dev-2025q1",
        "clusters[3].versionSet: unknown version set 'dev-2025q1' (known: dev-2024q4, prod-2024q4)",
    ),
    (
        "unknown-cluster",
        "      training-eastus: {queue: gpu-cluster-queue}\n      dev-eastus:\n    priorityClasses: [scheduled-training, exploratory]",
        "      training-westus: {queue: gpu-cluster-queue}\n      dev-eastus:\n    priorityClasses: [scheduled-training, exploratory]",
        "      training-westus:",
        "training-westus",
        "teams[2].clusters.training-westus: unknown cluster 'training-westus' "
        "(known: dev-eastus, prod-inference-eastus, prod-inference-westeu, training-eastus)",
    ),
    (
        "unknown-priority-class",
        "priorityClasses: [scheduled-training, exploratory]",
        "priorityClasses: [scheduled-training, notebooks]",
        "priorityClasses: [scheduled-training, notebooks]",
        "notebooks",
        "teams[2].priorityClasses[1]: unknown priority class 'notebooks' (known: exploratory, production-inference, scheduled-training)",
    ),
    (
        "unknown-flavor",
        "flavors: [a100-spot]\n        cohort: training\n        lendingLimit",
        "flavors: [a100-spot, h100-spot]\n        cohort: training\n        lendingLimit",
        "flavors: [a100-spot, h100-spot]",
        "h100-spot",
        "clusters[2].queues[0].flavors[1]: unknown node pool 'h100-spot' of training-eastus "
        "(known: a100-ondemand, a100-spot, h100-ondemand)",
    ),
    (
        "unknown-queue",
        "{queue: data-science-queue}",
        "{queue: b200-queue}",
        "b200-queue",
        "b200-queue",
        "teams[0].clusters.training-eastus.queue: unknown queue 'b200-queue' on training-eastus (known: data-science-queue, gpu-cluster-queue)",
    ),
    (
        "dr-partner-one-sided",
        "    drPartner: prod-inference-eastus\n",
        "",
        "drPartner: prod-inference-westeu",
        "prod-inference-westeu",
        "clusters[0].drPartner: 'prod-inference-westeu' does not name 'prod-inference-eastus' as its drPartner; DR pairs name each other",
    ),
    (
        "two-global-defaults",
        "    value: 100000\n",
        "    value: 100000\n    globalDefault: true\n",
        "globalDefault: true#2",
        "true",
        "priorityClasses[2].globalDefault: a second global default (priorityClasses[1] is one); at most one class may be",
    ),
    (
        "missing-gpu-quota",
        "requests: {cpu: 32, memory: 128Gi, gpu: 4}",
        "requests: {cpu: 32, memory: 128Gi}",
        "requests: {cpu: 32, memory: 128Gi}",
        "requests",
        "teams[2].quota.requests: a GPU quota (gpu) is required: without one a team may take every GPU",
    ),
    (
        "min-above-max",
        "        maxNodes: 8\n",
        "        minNodes: 9\n        maxNodes: 8\n",
        "minNodes: 9",
        "9",
        "clusters[3].nodePools[0].minNodes: minNodes 9 is above maxNodes 8",
    ),
    (
        "indistinguishable-pools",
        "labels: {accelerator: nvidia-h100}",
        "labels: {accelerator: nvidia-a100, kubernetes.azure.com/scalesetpriority: spot}",
        "labels: {accelerator: nvidia-a100, kubernetes.azure.com/scalesetpriority: spot}#2",
        "labels",
        "clusters[2].nodePools[2].labels: same labels as node pool 'a100-spot': Kueue could not tell them apart",
    ),
    (
        "gpu-capacity",
        "      training-eastus: {queue: gpu-cluster-queue}   # the cluster has two queues: say which\n      prod-inference-eastus: {requests: {gpu: 4}}\n      prod-inference-westeu",
        "      training-eastus: {queue: gpu-cluster-queue, requests: {gpu: 30}}\n      prod-inference-eastus: {requests: {gpu: 4}}\n      prod-inference-westeu",
        "training-eastus: {queue: gpu-cluster-queue, requests: {gpu: 30}",
        "training-eastus",
        "teams[1].clusters.training-eastus: GPU quotas on training-eastus add up to 42 "
        "(data-science 8, nlp 30, robotics 4), above its 40 GPUs (a100-spot 2 x 8, a100-ondemand 1 x 8, "
        "h100-ondemand 2 x 8); set capacity.gpuOvercommit to allow it",
    ),
]


@pytest.mark.parametrize(("old", "new", "needle", "token", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_check_reports_field_and_position(example_text: str, old: str, new: str, needle: str, token: str, expected: str) -> None:
    broken = replace_once(example_text, old, new)
    needle, _, nth = needle.partition("#")  # "text#2": the second line containing text
    assert findings_of(broken) == [f"{at(broken, needle, token, int(nth or 1))}: {expected}"]


def test_yaml_syntax_error_points_at_the_problem(example_text: str) -> None:
    broken = replace_once(example_text, "labels: {accelerator: nvidia-t4}", "labels: {accelerator: nvidia-t4")
    [finding] = findings_of(broken)
    assert finding.startswith(f"{line_of(broken, 'labels: {accelerator: nvidia-t4') + 1}:")
    assert "(document): YAML syntax: did not find expected ',' or '}'" in finding


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("        maxNodes: 8\n", "        maxnodes: 8\n", "clusters[3].nodePools[0].maxnodes: unknown field; did you mean 'maxNodes'?"),
        (
            "{queue: data-science-queue}",
            "{queu: data-science-queue}",
            "teams[0].clusters.training-eastus.queu: unknown field; did you mean 'queue'?",
        ),
        ("  costCenter: cc-1000", "  costcentre: cc-1000", "metadata.costcentre: unknown field; did you mean 'costCenter'?"),
    ],
)
def test_a_misspelt_field_gets_a_suggestion(example_text: str, old: str, new: str, expected: str) -> None:
    found = [f.split(": ", 1)[1] for f in findings_of(replace_once(example_text, old, new))]
    assert expected in found


def test_an_indentation_slip_names_the_block_and_the_likely_cause(example_text: str) -> None:
    broken = replace_once(example_text, "        maxNodes: 8\n", "        maxNodes: 8\n      maxnodes: 9\n")
    [finding] = findings_of(broken)
    line = line_of(broken, "      maxnodes: 9")
    start = line_of(broken, "    nodePools:", 5)  # dev-eastus's pools (after training-eastus' volcano.nodePools): the block the slip breaks
    assert finding == (
        f"{line}:7: (document): YAML syntax: did not find expected '-' indicator "
        f"(a block collection from line {start + 1}); check this line's indentation"
    )


def test_duplicate_keys_are_all_reported(example_text: str) -> None:
    broken = replace_once(example_text, "  owner: platform", "  name: again\n  owner: platform")
    broken = replace_once(broken, "    kubernetes: 1.30.1\n", "    kubernetes: 1.30.1\n    kubernetes: 1.31.0\n")
    assert findings_of(broken) == [
        f"{line_of(broken, 'name: again')}:3: metadata.name: duplicate key 'name' (first at line {line_of(broken, 'name: contoso-ai')})",
        f"{line_of(broken, 'kubernetes: 1.31.0')}:5: versionSets.dev-2024q4.kubernetes: "
        f"duplicate key 'kubernetes' (first at line {line_of(broken, 'kubernetes: 1.30.1')})",
    ]


def test_every_problem_is_reported_at_once_in_file_order(example_text: str) -> None:
    broken = replace_once(example_text, "environment: dev", "environment: develop")
    broken = replace_once(broken, "  owner: platform", "  owner: Platform")
    broken = replace_once(broken, "gpusPerNode: 8\n        cpuPerNode: 88", "gpusPerNode: -1\n        cpuPerNode: 88")
    found = findings_of(broken)
    assert [f.split(": ")[1] for f in found] == ["metadata.owner", "clusters[2].nodePools[2].gpusPerNode", "clusters[3].environment"]
    lines = [int(f.split(":")[0]) for f in found]
    assert lines == sorted(lines)


def test_overcommit_ratio_allows_more_quota_than_gpus(example_text: str) -> None:
    heavy = replace_once(
        example_text,
        "      training-eastus: {queue: gpu-cluster-queue}   # the cluster has two queues: say which\n      prod-inference-eastus: {requests: {gpu: 4}}\n      prod-inference-westeu",
        "      training-eastus: {queue: gpu-cluster-queue, requests: {gpu: 30}}\n      prod-inference-eastus: {requests: {gpu: 4}}\n      prod-inference-westeu",
    )
    relaxed = replace_once(heavy, "# capacity:\n#   gpuOvercommit: 1.5", "capacity:\n  gpuOvercommit: 1.5")
    # the cluster's 40 GPUs x 1.5 hold the 42 (a guarantee is kept capacity: overcommit never applies to it)
    assert findings_of(relaxed) == []
    tight = replace_once(heavy, "# capacity:\n#   gpuOvercommit: 1.5", "capacity:\n  gpuOvercommit: 1.02")
    [finding] = findings_of(tight)
    assert "add up to 42" in finding and "above its 40 GPUs" in finding and "x overcommit 1.02 = 40.8" in finding


def test_quantities_compare_by_value_not_text(example_text: str) -> None:
    same = replace_once(example_text, "limits: {cpu: 64, memory: 256Gi}", "limits: {cpu: 32000m, memory: 131072Mi}")
    assert findings_of(same) == []

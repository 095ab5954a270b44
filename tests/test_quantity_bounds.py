"""Quantities are bounded where they are read: the API server's largest quantity, 2^63-1, and no more.

Kubernetes' resource.Quantity holds at most the largest int64 in magnitude (`maxAllowed` in
k8s.io/apimachinery/pkg/api/resource). fleetgen's Quantity refuses anything beyond it, so a 5,000-digit
quota is one finding at its line and no renderer can meet a number it cannot print.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest
from conftest import EXAMPLE, findings_of, line_of, quickly, replace_once
from hypothesis import given
from hypothesis import strategies as st

from fleetgen.model.types import LARGEST_QUANTITY, LONGEST_QUANTITY, Quantity
from fleetgen.render.limit_range import share_text

Run = Callable[..., CompletedProcess[str]]
NINES = "9" * 5000
TEAM_LIMITS = "limits: {cpu: 128, memory: 512Gi, gpu: 8}"
SUFFIXES = {
    "": 1,
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    **{s: 10 ** (3 * i) for i, s in enumerate("kMGTPE", start=1)},
    **{s: 1024**i for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), start=1)},
}


def test_the_bound_is_the_largest_int64_in_every_notation() -> None:
    assert Quantity(str(LARGEST_QUANTITY)).value == LARGEST_QUANTITY
    assert Quantity(f"-{LARGEST_QUANTITY}").value == -LARGEST_QUANTITY
    assert Quantity("7Ei").value == 7 * 1024**6 and Quantity("8E").value == 8 * 10**18
    assert Quantity("1E").value == 10**18 and Quantity("1e3").value == 1000  # E is exa, e an exponent
    for beyond in (str(LARGEST_QUANTITY + 1), "8Ei", "10E", "1e19", "9223372036854775.808k", "1e999", NINES):
        with pytest.raises(ValueError, match=r"larger than Kubernetes' largest quantity, 2\^63-1"):
            Quantity(beyond)


def test_long_and_malformed_quantities_are_refused_fast_in_one_short_line() -> None:
    for text in (NINES, "1" * 10**6 + "x", "0" * 100 + "1", "1" * 10**5 + "Gb", "1e" + "9" * 1000, "1." * 3000):
        with quickly(50, text[:20]), pytest.raises(ValueError) as caught:  # a second on a quiet machine
            Quantity(text)
        message = str(caught.value)
        assert "\n" not in message and len(message) < 200, message


def reference_value(number: str, suffix: str, exponent: int | None) -> Fraction:
    """The value Kubernetes reads, computed apart from fleetgen: decimal digits times the suffix's factor."""
    scale = Fraction(10) ** exponent if exponent is not None else Fraction(SUFFIXES[suffix])
    return Fraction(Decimal(number)) * scale


NUMBER = st.builds(
    lambda sign, whole, fraction: f"{sign}{whole}{fraction}",
    st.sampled_from(["", "+", "-"]),
    st.one_of(st.integers(0, 10**25).map(str), st.just("0" * 30 + "7")),
    st.one_of(st.just(""), st.integers(0, 10**12).map(lambda n: f".{n}")),
)


@given(number=NUMBER, suffix=st.sampled_from(sorted(SUFFIXES)), exponent=st.one_of(st.none(), st.integers(-40, 40)))
def test_a_quantity_is_taken_exactly_when_it_is_within_the_bound(number: str, suffix: str, exponent: int | None) -> None:
    text = number + (f"e{exponent}" if exponent is not None else suffix)
    expected = reference_value(number, suffix, exponent)
    try:
        quantity = Quantity(text)
    except ValueError as exc:
        assert abs(expected) > LARGEST_QUANTITY or len(text) > LONGEST_QUANTITY, (text, exc)
        return
    assert quantity.value == expected and abs(quantity.value) <= LARGEST_QUANTITY
    for resource in ("cpu", "memory"):  # what a LimitRange prints of it: never an unprintable number
        assert len(share_text(abs(quantity.value), resource)) <= 24
    canonical = quantity.canonical()  # what cluster-info prints of a pool's size: the same value, exactly
    digits = canonical.rstrip("KMGTPEi")
    assert reference_value(digits, canonical[len(digits) :], None) == abs(quantity.value) or quantity.value < 0


def test_a_five_thousand_digit_quota_is_one_finding_at_its_line(example_text: str) -> None:
    text = replace_once(example_text, TEAM_LIMITS, f"limits: {{cpu: '{NINES}', memory: 512Gi, gpu: 8}}")
    line = line_of(text, NINES)
    column = text.splitlines()[line - 1].index("'9") + 1
    [finding] = findings_of(text)
    assert finding.startswith(
        f"{line}:{column}: teams[0].quota.limits.cpu: '99999999999999999999'...'99999999' (5,000 characters) is larger"
    )


def test_a_pool_whose_total_is_out_of_bounds_is_a_finding_at_its_size(example_text: str) -> None:
    text = example_text.replace("cpuPerNode: 22", "cpuPerNode: 3E", 1)  # t4-spot on dev-eastus, 4 nodes
    line = line_of(text, "cpuPerNode: 3E")
    found = findings_of(text)
    assert found and all(f.startswith(f"{line}:") and "3E x maxNodes" in f for f in found), found


@pytest.mark.parametrize("command", [["validate"], ["render"]])
def test_validate_and_render_refuse_a_huge_quota_with_exit_1(tmp_path: Path, cli_run: Run, command: list[str]) -> None:
    text = replace_once(EXAMPLE.read_text(encoding="utf-8"), TEAM_LIMITS, f"limits: {{cpu: '{NINES}', memory: 512Gi, gpu: 8}}")
    (tmp_path / "fleet.yaml").write_text(text, encoding="utf-8")
    done = cli_run(*command, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "internal error" not in done.stderr and "teams[0].quota.limits.cpu" in done.stderr
    assert all(len(line) < 300 for line in done.stderr.splitlines())


def test_team_add_refuses_a_huge_cpu_and_leaves_the_file(tmp_path: Path, cli_run: Run) -> None:
    shutil.copy(EXAMPLE, tmp_path / "fleet.yaml")
    args: list[Any] = ["team", "add", "newt", "--group", "g", "--cost-center", "cc", "--cluster", "dev-eastus", "--gpu", "1"]
    done = cli_run(*args, "--cpu", NINES, cwd=tmp_path)
    assert done.returncode == 1 and "larger than Kubernetes' largest quantity" in done.stderr, done.stderr
    assert (tmp_path / "fleet.yaml").read_bytes() == EXAMPLE.read_bytes()

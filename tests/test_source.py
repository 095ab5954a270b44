"""Reading fleet.yaml: positions, YAML 1.2 scalars, and input that must be refused cleanly."""

from __future__ import annotations

import pytest
from conftest import quickly

from fleetgen.errors import FindingsError, InputError
from fleetgen.source.reader import MAX_BYTES, parse_fleet, read_fleet


def problems(raw: bytes) -> list[str]:
    with pytest.raises(FindingsError) as caught:
        parse_fleet(raw, "fleet.yaml")
    return [f"{f.location}: {f.message}" for f in caught.value.findings]


def test_positions_of_values_and_keys() -> None:
    source = parse_fleet(b"a:\n  b: [1, x]\n  c: {d: e}\n", "f.yaml")
    assert str(source.locate(("a", "b", 1))) == "f.yaml:2:10"
    assert str(source.locate(("a", "c", "d"))) == "f.yaml:3:10"
    assert str(source.locate(("a", "c"))) == "f.yaml:3:3"  # a mapping: its key
    assert str(source.locate(("a", "missing", "deeper"))) == "f.yaml:2:3"  # nearest existing: `a`'s mapping


def test_yaml_1_2_scalars_and_number_text() -> None:
    data = parse_fleet(b"on: on\nyes: no\nv: 12.10\nn: 0o17\nh: 0x1f\nz: ~\nt: true\n", "f").data
    assert data["on"] == "on" and data["yes"] == "no"  # YAML 1.2: no Norway problem
    assert data["v"] == 12.1 and data["v"].text == "12.10"  # the written text survives
    assert (data["n"], data["h"], data["z"], data["t"]) == (15, 31, None, True)


def test_merge_keys_and_aliases() -> None:
    data = parse_fleet(b"base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n", "f").data
    assert data["use"] == {"x": 1, "y": 3}


def test_invalid_utf8_names_line_and_column() -> None:
    assert problems(b"a: 1\nb: caf\xe9\n") == ["fleet.yaml:2:7: not valid UTF-8 (byte 0xe9)"]


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with quickly(100, "an alias bomb"):
        found = problems("\n".join(lines).encode())
    assert len(found) == 1 and "values after expanding aliases; refusing" in found[0]


def test_deep_nesting_is_refused() -> None:
    found = problems(("[" * 200 + "]" * 200).encode())
    assert len(found) == 1 and ("nested more than 64 levels deep" in found[0] or "nests too deeply" in found[0])


def test_empty_and_custom_tags() -> None:
    assert problems(b"") == ["fleet.yaml:1:1: the file is empty"]
    assert problems(b"a: !vault xyz\n") == ["fleet.yaml:1:4: unsupported YAML tag !vault"]


def test_oversized_file_is_refused_before_parsing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    big = tmp_path / "fleet.yaml"
    with big.open("wb") as handle:
        handle.truncate(MAX_BYTES + 10)
    with pytest.raises(InputError, match="larger than 16 MiB"):
        read_fleet(big)


def test_missing_file_and_folder_are_input_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="no such file"):
        read_fleet(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match="is a folder"):
        read_fleet(tmp_path)


def test_a_list_whose_every_item_fails_is_not_also_reported_too_short() -> None:
    from conftest import EXAMPLE, findings_of

    text = EXAMPLE.read_text().replace("        gpusPerNode: 8\n", "        gpusPerNode: true\n")
    found = findings_of(text)
    assert found and all("gpusPerNode: Input should be a valid integer, got true" in f for f in found), found

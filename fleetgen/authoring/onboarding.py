"""`fleetgen team add` and `team remove`: onboarding as a pull request, not a ticket.

Both edit fleet.yaml in place (comments and layout kept) and hand the result back for validation;
nothing is written when validation refuses it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.tokens import CommentToken

from fleetgen.errors import InputError
from fleetgen.model import Fleet
from fleetgen.review.offboarding import left_behind
from fleetgen.source.edit import RoundTrip, flow_map, flow_seq


def _last_key_comment(node: Any) -> tuple[Any, Any] | None:
    """(mapping, key) holding the comment after the last line of `node`, descending into block children."""
    while isinstance(node, CommentedMap) and node:
        key = list(node)[-1]
        tokens = node.ca.items.get(key)
        child = node[key]
        if tokens and len(tokens) > 2 and tokens[2] is not None:
            return node, key
        if _block_child(node) is None:
            return None
        node = child
    return None


def _split_trailing(item: Any) -> Any:
    """Detach the comment lines that follow `item` (they introduce the next section); keep its own EOL comment."""
    found = _last_key_comment(item)
    if found is None:
        return None
    mapping, key = found
    token = mapping.ca.items[key][2]
    own, newline, rest = token.value.partition("\n")
    if not rest.strip():
        return None
    blank = rest[: len(rest) - len(rest.lstrip("\n"))]  # the blank lines stay: they separate the items
    token.value = own + newline + blank
    moved = copy.copy(token)
    moved.value = "\n" + rest  # an empty end-of-line comment, then the block that follows
    return moved


def _attach_trailing(item: CommentedMap, token: Any) -> None:
    if token is not None:
        key = list(item)[-1]
        item.ca.items[key] = [None, None, token, None]


def _block_child(node: CommentedMap) -> CommentedMap | None:
    """The value of the last key when it is a non-empty block mapping (its lines come last)."""
    child = node[list(node)[-1]]
    return child if isinstance(child, CommentedMap) and child and not child.fa.flow_style() else None


def _deepest_block_map(item: CommentedMap) -> CommentedMap:
    while (child := _block_child(item)) is not None:
        item = child
    return item


def _end_line(item: CommentedMap, blank: bool) -> None:
    """Set whether the last line of `item` is followed by a blank line (when ruamel keeps the block after the list)."""
    found = _last_key_comment(item)
    if found is not None:
        mapping, key = found
        token = mapping.ca.items[key][2]
        token.value = token.value.partition("\n")[0] + ("\n\n" if blank else "\n")
    elif blank:
        _attach_trailing(_deepest_block_map(item), CommentToken("\n\n", CommentMark(0), None))


@dataclass(frozen=True)
class NewTeam:
    """What `fleetgen team add` asks for; everything else takes the model's defaults."""

    name: str
    group: str
    cost_center: str
    clusters: tuple[str, ...]
    gpu: int
    project: str | None = None
    cpu: str | None = None
    memory: str | None = None
    pods: int | None = None
    queues: tuple[tuple[str, str], ...] = ()  # (cluster, ClusterQueue) where the team names its queue
    registries: tuple[str, ...] = ()  # besides the fleet's
    storage: tuple[tuple[str, str], ...] = ()  # (storage class, quantity): the storage quota of each class
    volumes: tuple[tuple[str, dict[str, str]], ...] = ()  # (cluster, the volume's fields as fleet.yaml writes them)

    def entry(self) -> CommentedMap:
        """The team as fleet.yaml writes it: short maps on one line, `{}` for default placements."""
        requests: dict[str, Any] = {"gpu": self.gpu}
        requests |= {k: v for k, v in (("cpu", self.cpu), ("memory", self.memory)) if v is not None}
        quota = CommentedMap({"requests": flow_map(requests)})
        if self.pods is not None:
            quota["pods"] = self.pods
        if self.storage:
            quota["storage"] = flow_map(dict(self.storage))
        team = CommentedMap({"name": self.name, "group": self.group, "costCenter": self.cost_center, "project": self.project or self.name})
        if self.registries:
            team["registries"] = flow_seq(list(self.registries))
        team["quota"] = quota
        team["clusters"] = CommentedMap({c: self._placement(c) for c in self.clusters})
        return team

    def _placement(self, cluster: str) -> CommentedMap:
        """What the team states on one cluster: its queue where it names one, its volumes there."""
        placement: dict[str, Any] = {"queue": q} if (q := dict(self.queues).get(cluster)) else {}
        volumes = [flow_map(fields) for on, fields in self.volumes if on == cluster]
        if volumes:
            placement["volumes"] = flow_seq(volumes)
        return flow_map(placement)


def add_team(text: str, fleet: Fleet, new: NewTeam) -> str:
    if any(t.name == new.name for t in fleet.teams):
        raise InputError(f"team {new.name!r} already exists in fleet.yaml")
    if not new.clusters:
        raise InputError("name at least one --cluster for the team")
    document = RoundTrip(text)
    team = new.entry()
    if "teams" not in document.data or document.data["teams"] is None:
        document.data["teams"] = CommentedSeq()
    teams: CommentedSeq = document.data["teams"]
    trailing = _split_trailing(teams[-1]) if len(teams) else None
    if len(teams) and trailing is None:
        _end_line(teams[-1], blank=True)  # teams are separated by a blank line
    teams.append(team)
    _attach_trailing(team["clusters"], trailing)  # the next section's comment follows the new last team
    return document.text()


def remove_team(text: str, fleet: Fleet, name: str) -> str:
    index = next((i for i, t in enumerate(fleet.teams) if t.name == name), None)
    if index is None:
        raise InputError(f"no team {name!r} in fleet.yaml (teams: {', '.join(t.name for t in fleet.teams) or 'none'})")
    document = RoundTrip(text)
    teams: CommentedSeq = document.data["teams"]
    last = index == len(teams) - 1
    trailing = _split_trailing(teams[index]) if last else None
    del teams[index]
    if last and len(teams):
        if trailing is not None:  # the block that followed the removed team now follows the new last one
            found = _last_key_comment(teams[-1])
            if found is None:
                _attach_trailing(_deepest_block_map(teams[-1]), trailing)
            else:
                mapping, key = found
                mapping.ca.items[key][2].value = _join(mapping.ca.items[key][2].value, trailing.value)
        else:  # ruamel keeps that block after the list: it brings its own blank line
            _end_line(teams[-1], blank=False)
    return document.text()


def _join(own: str, block: str) -> str:
    """An item's end-of-line comment followed by the block comment that came after the removed item."""
    return own.partition("\n")[0] + block


def removal_notes(fleet: Fleet, name: str) -> list[str]:
    """What `team remove` says besides the files: what stays behind, how it goes for good, and who approves."""
    team = next(t for t in fleet.teams if t.name == name)
    clusters = [c for c in team.clusters if any(k.name == c for k in fleet.clusters)]
    owners = ", ".join(fleet.platform_owners)
    notes = [f"team {name}: {left_behind(team, clusters)}"] if clusters else []
    return notes + [f"team {name}: its pull request needs the platform owners' approval (fleetgen-removal: {owners})"]

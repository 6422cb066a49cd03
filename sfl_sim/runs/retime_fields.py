"""Which scenario fields a re-timing may change: the one table of timing-only and training fields.

A *timing* field changes what the clock and the energy ledger see (the cell, compute budgets,
availability, energy, the straggler policy); a re-timing replays the recorded work under it and
checks every decision (:mod:`sfl_sim.runs.retime`).  A *training* field changes what the model
learns from or how it is scored; a re-timing refuses it before any work, and a study trains once per
distinct setting of these fields (:mod:`sfl_sim.study.execute`).  Imports nothing heavy.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

__all__ = ["FIELD_KINDS", "TIMING", "TRAINING", "FieldKind", "changed_fields", "field_kind", "training_changes",
           "training_key"]

FieldKind = Literal["timing", "training"]
TIMING: FieldKind = "timing"
TRAINING: FieldKind = "training"

#: Every scenario field, by what a change of it does: ``timing`` (what the clock and the energy
#: ledger see; the replay checks that the decisions stay as recorded) or ``training`` (what the
#: model learns from, or how it is evaluated; refused before any work).  A field is covered by its
#: longest listed prefix; ``tests/runs/test_retime.py`` checks that the table covers the whole
#: scenario schema, so a new field must be classified here.
FIELD_KINDS: dict[str, FieldKind] = {
    "name": TIMING,  # a label
    "output_dir": TIMING,  # where files go
    "target_accuracies": TIMING,  # which times-to-accuracy the summary reports
    "seed": TRAINING,  # every stream: partition, initial weights, minibatches...
    "rounds": TRAINING,
    "max_sim_time_s": TRAINING,  # which rounds run: a run with a time budget is not re-timed at all
    "eval_every_rounds": TRAINING,  # which rounds have recorded scores
    "eval_every_sim_s": TRAINING,  # which simulated times have recorded scores (asynchronous runs)
    "eval_samples": TRAINING,
    "eval_batch_size": TRAINING,  # the test loss's summation order
    "device": TRAINING,  # kernels round differently
    "execution": TRAINING,
    "algorithms": TRAINING,
    "training": TRAINING,
    "data": TRAINING,
    "model": TRAINING,
    "compression": TRAINING,
    "metrics": TRAINING,  # the local models' scores are not recorded
    "metrics.client_record": TIMING,  # clients.csv: what the radio did, written by the replay too
    "metrics.slot_trace": TIMING,  # slots.csv: the grants slot by slot, written by the replay too
    "clients.count": TRAINING,  # the partition
    "clients.participation": TRAINING,  # the cohort size
    "clients.selection": TRAINING,  # the cohorts (a channel-aware selector: the replay checks them anyway)
    "clients.compute_flops_per_s_min": TIMING,
    "clients.compute_flops_per_s_max": TIMING,
    "clients.availability": TIMING,  # who is online: the cohorts and departures are checked
    "clients.capability": TIMING,  # device speeds and link traces
    "stragglers.policy": TIMING,  # the kept clients are checked
    "stragglers.deadline_s": TIMING,
    "stragglers.over_selection_fraction": TRAINING,  # how many are selected
    "server": TIMING,
    "cell": TIMING,
    "energy": TIMING,  # batteries: the cohorts and drops are checked
}


def field_kind(path: str) -> FieldKind | None:
    """The kind of the dotted scenario field ``path`` (its longest prefix in :data:`FIELD_KINDS`);
    None when the table does not cover it."""
    parts = path.split(".")
    for n in range(len(parts), 0, -1):
        kind = FIELD_KINDS.get(".".join(parts[:n]))
        if kind is not None:
            return kind
    return None


def _leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, Mapping) and node:
        for key, value in node.items():
            yield from _leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, node


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The dotted fields whose values differ between two scenario mappings (leaves; a list or an
    empty mapping is one value)."""
    old, new = dict(_leaves(before)), dict(_leaves(after))
    return sorted(k for k in old.keys() | new.keys() if old.get(k, _MISSING) != new.get(k, _MISSING))


_MISSING = object()


def training_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The changed fields (:func:`changed_fields`) that are not timing-only."""
    return [f for f in changed_fields(before, after) if field_kind(f) != TIMING]


def training_key(scenario: Mapping[str, Any]) -> str:
    """What two scenario mappings share when they differ in timing fields only: the training
    fields' leaves, as a canonical string (equal keys: one training serves both)."""
    import json

    return json.dumps({f: v for f, v in _leaves(scenario) if field_kind(f) != TIMING}, sort_keys=True, default=str)

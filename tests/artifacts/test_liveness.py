"""The storage plan's rule (artifacts/liveness.py): entries that share a storage_id are never
live at the same time. An op output over a param, over the model's input, over its own input
or over a value still to be read is refused when graph.json is parsed, naming both entries;
a ``__nop`` view of its input is the same value and may share its storage."""
from __future__ import annotations

import json
from typing import Any

import pytest
from test_graph import expect_error, valid_graph

from minigraph.artifacts.graph_json import parse_graph
from minigraph.artifacts.liveness import check_storage_plan

# valid_graph: entries 0 data, 1 weight, 2 conv (op 0), 3 and 4 split (op 1), 5 a __nop view
# of 4 (op 2, same storage), 6 add (op 3) reusing conv's storage; heads 6 and 4


def _sids(*sids: int) -> dict[str, Any]:
    doc = valid_graph()
    doc["attrs"]["storage_id"][1] = list(sids)
    return doc


def test_the_valid_plan_is_accepted_and_described() -> None:
    check = check_storage_plan(parse_graph(json.dumps(valid_graph())))
    assert (check.storage_ids, check.reused, check.views) == (5, 1, 1)
    assert check.describe().startswith("storage plan checked: 5 storage ids (1 reused, "
                                       "1 __nop views)")


@pytest.mark.parametrize("sids, fragments, node, eid", [
    # conv writes over the weight it reads
    ((0, 1, 1, 3, 4, 4, 2), ("storage_id 1", "entry 2", "entry 1", "'weight'", "its own input"),
     2, 2),
    # add writes over the model input (which it does not read): later runs see clobbered data
    ((0, 1, 2, 3, 4, 4, 0), ("storage_id 0", "entry 6", "'data'", "an input or param",
                             "through every run"), 5, 6),
    # split writes over conv's output, which it reads
    ((0, 1, 2, 2, 3, 3, 4), ("storage_id 2", "entry 3", "entry 2", "its own input"), 3, 3),
    # the two outputs of one op in one storage
    ((0, 1, 2, 3, 3, 4, 2), ("storage_id 3", "entry 3", "entry 4"), 3, 4),
    # the __nop's output not in its input's storage is a value of its own, written (op 2) over
    # split's first output, which add reads after it (op 3)
    ((0, 1, 2, 3, 4, 3, 2), ("storage_id 3", "entry 5", "entry 3", "a value still to be read",
                             "live from op 1 to op 3"), 4, 5),
    # two params in one storage: setting one sets the other
    ((0, 0, 1, 2, 3, 3, 1), ("storage_id 0", "entry 1", "entry 0",
                             "setting one input or param would overwrite the other"), 1, 1),
])
def test_overlapping_live_entries_are_refused(sids, fragments, node, eid) -> None:
    expect_error(_sids(*sids), *fragments, node=node, field=f"attrs.storage_id[{eid}]")


def test_a_view_is_its_source_and_keeps_it_live() -> None:
    """The __nop view of split's second output (entry 4) is a graph output: entry 4's storage
    is live to the end through it, and add may not write there (it reads the view)."""
    doc = valid_graph()
    doc["heads"] = [[5, 0, 0]]  # entry 4 itself no longer an output
    parse_graph(json.dumps(doc))
    doc["attrs"]["storage_id"][1] = [0, 1, 2, 3, 4, 4, 4]
    expect_error(doc, "storage_id 4", "entry 6", "entry 4", "to the end of the run",
                 "its own input", node=5, field="attrs.storage_id[6]")


def test_storage_reused_after_the_last_reader_is_accepted() -> None:
    """A value written after every reader of the one before it in its storage: TVM's reuse."""
    doc = valid_graph()
    assert doc["attrs"]["storage_id"][1][6] == doc["attrs"]["storage_id"][1][2]
    parse_graph(json.dumps(doc))

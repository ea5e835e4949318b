"""Tests for minigraph.artifacts.graph_json: parsing, validation messages, round trip, fuzzing."""
from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from graphdoc import op as _op
from hypothesis import HealthCheck, given, settings, strategies as st

from minigraph.artifacts.graph import Graph, NodeEntry
from minigraph.artifacts.graph_checks import SUPPORTED_DLTYPES
from minigraph.artifacts.graph_json import dump_graph, load_graph, parse_graph
from minigraph.errors import GraphError, InputError


def valid_graph() -> dict[str, Any]:
    """2 inputs, a multi-output node, a __nop alias, shared storage ids, 2 heads."""
    return {
        "nodes": [
            {"op": "null", "name": "data", "inputs": []},
            {"op": "null", "name": "weight", "inputs": []},
            _op("conv", "fused_conv", [[0, 0, 0], [1, 0, 0]]),
            _op("split", "fused_split", [[2, 0, 0]], n_out=2),
            _op("reshape", "__nop", [[3, 1, 0]]),
            _op("add", "fused_add", [[3, 0, 0], [4, 0, 0]]),
        ],
        "arg_nodes": [0, 1],
        "heads": [[5, 0, 0], [3, 1, 0]],
        "attrs": {
            "dltype": ["list_str", ["float32"] * 7],
            "shape": ["list_shape", [[1, 4], [4, 4], [1, 4], [1, 2], [1, 2], [1, 2], [1, 2]]],
            "storage_id": ["list_int", [0, 1, 2, 3, 4, 4, 2]],
        },
        "node_row_ptr": [0, 1, 2, 3, 5, 6, 7],
    }


@pytest.fixture
def gd() -> dict[str, Any]:
    return valid_graph()


def parse(d: Any) -> Graph:
    return parse_graph(json.dumps(d))


def expect_error(d: Any, *fragments: str, node: int | None = None,
                 field: str | None = None) -> GraphError:
    """Parsing must fail with a GraphError whose message contains every fragment."""
    with pytest.raises(GraphError) as info:
        parse_graph(d if isinstance(d, (str, bytes)) else json.dumps(d))
    err = info.value
    for frag in fragments:
        assert frag in str(err), f"{frag!r} not in {str(err)!r}"
    if node is not None:
        assert err.node_index == node and f"node {node}" in str(err)
    if field is not None:
        assert err.field is not None and err.field.startswith(field), err.field
        assert f"field '{err.field}'" in str(err)
    return err


# ---------------------------------------------------------------- API on a valid graph

def test_parse_valid_graph_api(gd: dict[str, Any]) -> None:
    g = parse(gd)
    assert g.num_entries == 7 and len(g.nodes) == 6
    assert g.input_names() == ("data", "weight")
    assert [n.name for n in g.op_nodes()] == ["conv", "split", "reshape", "add"]
    assert g.output_entries() == (6, 4)
    assert g.eid(3, 1) == 4 and g.entry_id(NodeEntry(5, 0)) == 6
    assert g.storage_ids == (0, 1, 2, 3, 4, 4, 2)
    assert g.shapes[0] == (1, 4) and g.dltypes == ("float32",) * 7
    split = g.node_by_name("split")
    assert split.index == 3 and split.num_outputs == 2 and split.num_inputs == 1
    assert split.func_name == "fused_split" and split.is_op and not split.flatten_data
    assert split.attr("num_outputs") == "2" and split.attr("nope", "x") == "x"
    data = g.nodes[0]
    assert data.func_name == "" and not data.is_op and data.num_outputs == 1
    assert g.nodes[4].func_name == "__nop"
    assert g.heads == (NodeEntry(5, 0, 0), NodeEntry(3, 1, 0))
    assert g.device_index is None and g.metadata is None
    hash(g)  # frozen all the way down


def test_node_by_name_absent(gd: dict[str, Any]) -> None:
    with pytest.raises(GraphError, match="no node named 'nope'"):
        parse(gd).node_by_name("nope")


def test_eid_out_of_range(gd: dict[str, Any]) -> None:
    with pytest.raises(GraphError):
        parse(gd).eid(3, 2)


def test_round_trip(gd: dict[str, Any]) -> None:
    g = parse(gd)
    text = dump_graph(g)
    assert parse_graph(text) == g
    out = json.loads(text)
    assert set(out) == {"nodes", "arg_nodes", "heads", "attrs", "node_row_ptr"}
    assert out["heads"] == [[5, 0, 0], [3, 1, 0]]
    assert all("attrs" in n for n in out["nodes"][2:])
    assert out["attrs"]["shape"][0] == "list_shape"


def test_round_trip_with_optional_fields(gd: dict[str, Any]) -> None:
    gd["attrs"]["device_index"] = ["list_int", [1] * 7]
    gd["attrs"]["storage_scope"] = ["list_str", ["global"] * 7]
    gd["metadata"] = {"b": [1, 2], "a": {"x": "y"}}
    g = parse(gd)
    assert g.device_index == (1,) * 7 and g.storage_scope == ("global",) * 7
    assert g.metadata_dict() == {"a": {"x": "y"}, "b": [1, 2]}
    text = dump_graph(g)
    assert parse_graph(text) == g
    assert list(json.loads(text))[-1] == "metadata"  # TVM's reader stops at metadata


def test_bytes_input_and_bom(gd: dict[str, Any]) -> None:
    raw = json.dumps(gd).encode()
    assert parse_graph(raw) == parse_graph(b"\xef\xbb\xbf" + raw) == parse(gd)


# ---------------------------------------------------------------- Relay / NNVM-era files

def test_relay_attr_key_and_two_int_entries(gd: dict[str, Any]) -> None:
    for n in gd["nodes"]:
        n["inputs"] = [e[:2] for e in n["inputs"]]
        if "attrs" in n:
            n["attr"] = n.pop("attrs")
    gd["heads"] = [h[:2] for h in gd["heads"]]
    assert parse(gd) == parse(valid_graph())


def test_missing_node_row_ptr_is_derived(gd: dict[str, Any]) -> None:
    del gd["node_row_ptr"]
    assert parse(gd).node_row_ptr == (0, 1, 2, 3, 5, 6, 7)


def test_int_attrs_are_stringified(gd: dict[str, Any]) -> None:
    gd["nodes"][3]["attrs"].update(num_inputs=1, num_outputs=2, flatten_data=1, hash=123)
    n = parse(gd).nodes[3]
    assert n.attr("num_outputs") == "2" and n.flatten_data and n.attr("hash") == "123"


def test_relay_extras_accepted(gd: dict[str, Any]) -> None:
    gd["metadata"] = {"signatures": {}}
    gd["attrs"]["device_index"] = ["list_int", [1] * 7]
    gd["attrs"]["extra"] = ["list_int", [1, 2]]  # TVM skips unknown list_int / size_t attrs
    gd["attrs"]["count"] = ["size_t", 3]
    gd["nodes"][5]["control_deps"] = [2]
    gd["nodes"][2]["attrs"]["data_layout"] = "NCHW"
    g = parse(gd)
    assert g.device_index == (1,) * 7 and g.nodes[2].attr("data_layout") == "NCHW"


def test_relay_style_file_with_interleaved_params() -> None:
    """Shaped like Relay's GraphExecutorCodegen output: params declared between op nodes,
    py2-style ', ' separators, hash/layout attrs, device_index."""
    nodes = [{"op": "null", "name": "data", "inputs": []},
             _op("tvmgen_default_fused_layout_transform", "tvmgen_default_fused_layout_transform",
                 [[0, 0, 0]]),
             {"op": "null", "name": "p0", "inputs": []},
             {"op": "null", "name": "p1", "inputs": []},
             _op("tvmgen_default_fused_nn_conv2d_add_nn_relu",
                 "tvmgen_default_fused_nn_conv2d_add_nn_relu", [[1, 0, 0], [2, 0, 0], [3, 0, 0]])]
    nodes[4]["attrs"].update(hash="13d40b07e198ac6b", data_layout="NCHW8c", out_layout="")
    d = {"nodes": nodes, "arg_nodes": [0, 2, 3], "heads": [[4, 0, 0]],
         "attrs": {"dltype": ["list_str", ["float32"] * 5],
                   "device_index": ["list_int", [1] * 5],
                   "storage_id": ["list_int", [0, 1, 2, 3, 4]],
                   "shape": ["list_shape", [[1, 3, 224, 224], [1, 1, 224, 224, 3],
                                            [4, 1, 3, 3, 3, 8], [1, 4, 1, 1, 8],
                                            [1, 4, 112, 112, 8]]]},
         "node_row_ptr": [0, 1, 2, 3, 4, 5]}
    g = parse_graph(json.dumps(d, indent=2, separators=(", ", ": ")))
    assert g.input_names() == ("data", "p0", "p1")
    assert g.op_nodes()[1].attr("hash") == "13d40b07e198ac6b"
    assert g.nodes[4].attr("out_layout") == "" and parse_graph(dump_graph(g)) == g


def test_version_kept(gd: dict[str, Any]) -> None:
    gd["heads"][0] = [5, 0, 3]
    g = parse(gd)
    assert g.heads[0] == NodeEntry(5, 0, 3) and parse_graph(dump_graph(g)) == g


def test_copy_node(gd: dict[str, Any]) -> None:
    gd["nodes"][4]["attrs"]["func_name"] = "__copy"
    # a __nop's output shares its input's storage (a view); a __copy's writes it: over its input
    expect_error(gd, "storage_id 4 is shared by entry 5", "entry 4", "its own input",
                 node=4, field="attrs.storage_id[5]")
    gd["attrs"]["storage_id"][1][5] = 5
    assert parse(gd).nodes[4].func_name == "__copy"


def test_load_graph_file(tmp_path: Path, gd: dict[str, Any]) -> None:
    p = tmp_path / "graph.json"
    p.write_text(json.dumps(gd))
    assert load_graph(p) == parse(gd)
    gd["nodes"][2]["op"] = "conv2d"
    p.write_text(json.dumps(gd))
    err = pytest.raises(GraphError, load_graph, p).value
    assert str(p) in str(err) and err.node_index == 2 and err.field == "op"


def test_load_graph_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "absent.json"
    err = pytest.raises(InputError, load_graph, p).value
    assert type(err) is InputError and str(p) in str(err)


def test_large_graph_is_fast() -> None:
    n = 2000
    nodes = [{"op": "null", "name": "x", "inputs": []}]
    nodes += [_op(f"op{i}", "f", [[i - 1, 0]]) for i in range(1, n)]
    d = {"nodes": nodes, "arg_nodes": [0], "heads": [[n - 1, 0]],
         "attrs": {"dltype": ["list_str", ["float32"] * n],
                   "shape": ["list_shape", [[1, 2]] * n],
                   # ping-pong: each op reads one storage id and writes the other
                   "storage_id": ["list_int", [0] + [1 + i % 2 for i in range(1, n)]]}}
    t0 = time.perf_counter()
    assert parse(d).num_entries == n
    assert time.perf_counter() - t0 < 1.0


# ---------------------------------------------------------------- validation, one rule each

@pytest.mark.parametrize("text", ["", "{", "nodes", "[1, 2]", "null", "3", '"x"',
                                  "[" * 100_000, b"\xff\xfe{"])
def test_not_json_object(text: str | bytes) -> None:
    expect_error(text, "graph.json")


def test_deeply_nested_value(gd: dict[str, Any]) -> None:
    text = json.dumps(gd)[:-1] + ', "metadata": ' + "[" * 50_000 + "]" * 50_000 + "}"
    expect_error(text)


@pytest.mark.parametrize("key", ["nodes", "arg_nodes", "heads", "attrs"])
def test_missing_top_key(gd: dict[str, Any], key: str) -> None:
    del gd[key]
    expect_error(gd, "missing", field=key)


def test_unknown_top_key(gd: dict[str, Any]) -> None:
    gd["bogus"] = 1
    expect_error(gd, "unsupported top-level key", field="bogus")


def test_empty_nodes(gd: dict[str, Any]) -> None:
    gd["nodes"] = []
    expect_error(gd, "non-empty", field="nodes")


def test_node_not_object(gd: dict[str, Any]) -> None:
    gd["nodes"][2] = ["tvm_op"]
    expect_error(gd, "must be an object", node=2)


@pytest.mark.parametrize("key", ["op", "name", "inputs"])
def test_node_missing_key(gd: dict[str, Any], key: str) -> None:
    del gd["nodes"][3][key]
    expect_error(gd, f"missing required key '{key}'", node=3, field=key)


def test_node_unknown_key(gd: dict[str, Any]) -> None:
    gd["nodes"][2]["extra"] = 1
    expect_error(gd, "unsupported key", "'conv'", node=2, field="extra")


def test_node_both_attr_and_attrs(gd: dict[str, Any]) -> None:
    gd["nodes"][2]["attr"] = {}
    expect_error(gd, "unsupported key", node=2, field="attr")


@pytest.mark.parametrize("op", ["conv2d", "", None, 1, ["tvm_op"]])
def test_bad_op(gd: dict[str, Any], op: Any) -> None:
    gd["nodes"][2]["op"] = op
    expect_error(gd, "'null' or 'tvm_op'", "'conv'", node=2, field="op")


def test_name_not_string(gd: dict[str, Any]) -> None:
    gd["nodes"][2]["name"] = 7
    expect_error(gd, "must be a string", node=2, field="name")


def test_inputs_not_list(gd: dict[str, Any]) -> None:
    gd["nodes"][2]["inputs"] = {"0": 0}
    expect_error(gd, "must be a list", node=2, field="inputs")


def test_null_node_with_inputs(gd: dict[str, Any]) -> None:
    gd["nodes"][1]["inputs"] = [[0, 0, 0]]
    expect_error(gd, "cannot have inputs", "'weight'", node=1, field="inputs")


@pytest.mark.parametrize("entry", [[0], [0, 0, 0, 0], [0.0, 0], [True, 0], [0, "0"], [-1, 0],
                                   "0", None, [0, 0, -1]])
def test_bad_entry_form(gd: dict[str, Any], entry: Any) -> None:
    gd["nodes"][2]["inputs"][1] = entry
    expect_error(gd, "[node_id, index]", "'conv'", node=2, field="inputs[1]")


@pytest.mark.parametrize("nid", [2, 3, 99])
def test_input_forward_or_self_reference(gd: dict[str, Any], nid: int) -> None:
    gd["nodes"][2]["inputs"][0] = [nid, 0, 0]  # self reference = cycle; later node = forward
    expect_error(gd, "earlier nodes", node=2, field="inputs[0]")


def test_input_index_beyond_outputs(gd: dict[str, Any]) -> None:
    gd["nodes"][4]["inputs"][0] = [3, 2, 0]
    expect_error(gd, "output 2 of node 3 'split', which has 2 output(s)", node=4,
                 field="inputs[0]")


@pytest.mark.parametrize("key", ["func_name", "num_inputs", "num_outputs", "flatten_data"])
def test_op_missing_param(gd: dict[str, Any], key: str) -> None:
    del gd["nodes"][2]["attrs"][key]
    expect_error(gd, f"lacks '{key}'", node=2, field=f"attrs.{key}")


def test_op_without_attrs(gd: dict[str, Any]) -> None:
    del gd["nodes"][2]["attrs"]
    expect_error(gd, "lacks 'func_name'", node=2, field="attrs.func_name")


@pytest.mark.parametrize("attrs", [None, [], "x"])
def test_attrs_not_object(gd: dict[str, Any], attrs: Any) -> None:
    gd["nodes"][2]["attrs"] = attrs
    expect_error(gd, "must be an object", node=2, field="attrs")


@pytest.mark.parametrize("value", [None, 1.5, True, [1], {"a": 1}])
def test_attr_value_not_string(gd: dict[str, Any], value: Any) -> None:
    gd["nodes"][2]["attrs"]["layout"] = value
    expect_error(gd, "must be a string", node=2, field="attrs.layout")


def test_num_inputs_mismatch(gd: dict[str, Any]) -> None:
    gd["nodes"][2]["attrs"]["num_inputs"] = "3"
    expect_error(gd, "says 3 but the node has 2", node=2, field="attrs.num_inputs")


@pytest.mark.parametrize("value", ["0", 0, "-1", -1, "abc", "1.0", " 1", "+1", 1.0, True, ""])
def test_bad_num_outputs(gd: dict[str, Any], value: Any) -> None:
    gd["nodes"][2]["attrs"]["num_outputs"] = value
    expect_error(gd, node=2, field="attrs.num_outputs")


@pytest.mark.parametrize("value", ["2", "x", 2])
def test_bad_flatten_data(gd: dict[str, Any], value: Any) -> None:
    gd["nodes"][2]["attrs"]["flatten_data"] = value
    expect_error(gd, node=2, field="attrs.flatten_data")


def test_empty_func_name(gd: dict[str, Any]) -> None:
    gd["nodes"][2]["attrs"]["func_name"] = ""
    expect_error(gd, "is empty", node=2, field="attrs.func_name")


def test_copy_arity(gd: dict[str, Any]) -> None:
    gd["nodes"][2]["attrs"]["func_name"] = "__copy"
    expect_error(gd, "__copy takes exactly 1 input", node=2, field="attrs.func_name")


def test_control_deps_forward(gd: dict[str, Any]) -> None:
    gd["nodes"][2]["control_deps"] = [4]
    expect_error(gd, "earlier nodes", node=2, field="control_deps")


@pytest.mark.parametrize("ptr", [[0, 1, 2, 3, 5, 6], [0, 1, 2, 3, 5, 6, 7, 8], "x"])
def test_row_ptr_length(gd: dict[str, Any], ptr: Any) -> None:
    gd["node_row_ptr"] = ptr
    expect_error(gd, "len(nodes)+1 = 7", field="node_row_ptr")


def test_row_ptr_start(gd: dict[str, Any]) -> None:
    gd["node_row_ptr"] = [1, 2, 3, 4, 6, 7, 8]
    expect_error(gd, "must start at 0", field="node_row_ptr[0]")


@pytest.mark.parametrize("ptr", [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 6, 7, 8],
                                 [0, 1, 2, 3, 3, 4, 5]])
def test_row_ptr_inconsistent(gd: dict[str, Any], ptr: list[Any]) -> None:
    gd["node_row_ptr"] = ptr
    expect_error(gd, "'split'", "has 2 output(s); expected 5", node=3, field="node_row_ptr[4]")


@pytest.mark.parametrize("ptr", [[0, 1, 2, 3.0, 5, 6, 7], [0, 1, 2, True, 5, 6, 7],
                                 [0, 1, 2, "3", 5, 6, 7]])
def test_row_ptr_not_int(gd: dict[str, Any], ptr: list[Any]) -> None:
    gd["node_row_ptr"] = ptr
    expect_error(gd, "is not an int", "'conv'", node=2, field="node_row_ptr[3]")


def test_parse_graph_rejects_non_text() -> None:
    with pytest.raises(GraphError, match="expected JSON text"):
        parse_graph(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("key,tag", [("shape", "list_int"), ("storage_id", "list_str"),
                                     ("dltype", "list_shape"), ("device_index", "list_str"),
                                     ("storage_scope", "list_int")])
def test_wrong_attr_tag(gd: dict[str, Any], key: str, tag: str) -> None:
    values = gd["attrs"].get(key, [None, [0] * 7])[1]
    gd["attrs"][key] = [tag, values]
    expect_error(gd, "must be [", field=f"attrs.{key}")


@pytest.mark.parametrize("value", [["list_int"], ["list_int", [0] * 7, 1], {"a": 1}, None])
def test_attr_not_tagged_pair(gd: dict[str, Any], value: Any) -> None:
    gd["attrs"]["storage_id"] = value
    expect_error(gd, "must be [", field="attrs.storage_id")


@pytest.mark.parametrize("key", ["shape", "dltype", "storage_id"])
def test_missing_graph_attr(gd: dict[str, Any], key: str) -> None:
    del gd["attrs"][key]
    expect_error(gd, "missing", field=f"attrs.{key}")


def test_unknown_graph_attr(gd: dict[str, Any]) -> None:
    gd["attrs"]["weird"] = ["list_str", ["a"]]
    expect_error(gd, "unknown graph attr", field="attrs.weird")


def test_graph_attrs_not_object(gd: dict[str, Any]) -> None:
    gd["attrs"] = []
    expect_error(gd, "must be an object", field="attrs")


@pytest.mark.parametrize("key", ["shape", "dltype", "storage_id", "device_index"])
@pytest.mark.parametrize("delta", [-1, 1])
def test_attr_length_mismatch(gd: dict[str, Any], key: str, delta: int) -> None:
    sample = {"shape": [1], "dltype": "float32", "storage_id": 0, "device_index": 1}[key]
    tag = {"shape": "list_shape", "dltype": "list_str"}.get(key, "list_int")
    gd["attrs"][key] = [tag, [sample] * (7 + delta)]
    expect_error(gd, "7 entries", field=f"attrs.{key}")


@pytest.mark.parametrize("shape", [[1, -2], [1, True], [1.0, 2], "1,2", None, [[1]], [2**63]])
def test_bad_shape(gd: dict[str, Any], shape: Any) -> None:
    gd["attrs"]["shape"][1][4] = shape  # entry 4 = node 3 'split', output 1
    expect_error(gd, "non-negative ints", "'split'", node=3, field="attrs.shape[4]")


def test_zero_dim_and_scalar_shapes_ok(gd: dict[str, Any]) -> None:
    gd["attrs"]["shape"][1][0] = []
    gd["attrs"]["shape"][1][1] = [0, 4]
    g = parse(gd)
    assert g.shapes[0] == () and g.shapes[1] == (0, 4)


@pytest.mark.parametrize("dltype", ["float8", "int4", "Float32", "", 32, None, "handle"])
def test_bad_dltype(gd: dict[str, Any], dltype: Any) -> None:
    gd["attrs"]["dltype"][1][6] = dltype
    expect_error(gd, "not supported", "'add'", node=5, field="attrs.dltype[6]")


@pytest.mark.parametrize("dltype", sorted(SUPPORTED_DLTYPES))
def test_supported_dltypes(gd: dict[str, Any], dltype: str) -> None:
    gd["attrs"]["dltype"][1][0] = dltype
    assert parse(gd).dltypes[0] == dltype


@pytest.mark.parametrize("sid", [-1, 1.0, True, "0", None, 2**31])
def test_bad_storage_id(gd: dict[str, Any], sid: Any) -> None:
    gd["attrs"]["storage_id"][1][2] = sid
    expect_error(gd, "non-negative int", "'conv'", node=2, field="attrs.storage_id[2]")


@pytest.mark.parametrize("dev", [-1, 1.5, False, "1"])
def test_bad_device_index(gd: dict[str, Any], dev: Any) -> None:
    gd["attrs"]["device_index"] = ["list_int", [1, 1, 1, dev, 1, 1, 1]]
    expect_error(gd, "non-negative int", node=3, field="attrs.device_index[3]")


def test_bad_storage_scope(gd: dict[str, Any]) -> None:
    gd["attrs"]["storage_scope"] = ["list_str", ["global"] * 6 + [1]]
    expect_error(gd, "must be a string", node=5, field="attrs.storage_scope[6]")


@pytest.mark.parametrize("args", [[0, 6], [0, -1], [0.0], [True], "0", None])
def test_arg_nodes_out_of_range_or_not_int(gd: dict[str, Any], args: Any) -> None:
    gd["arg_nodes"] = args
    expect_error(gd, "node ids in 0..5", field="arg_nodes")


def test_arg_node_is_op(gd: dict[str, Any]) -> None:
    gd["arg_nodes"] = [0, 1, 2]
    expect_error(gd, "only 'null' nodes", "'conv'", node=2, field="arg_nodes[2]")


def test_arg_node_duplicate(gd: dict[str, Any]) -> None:
    gd["arg_nodes"] = [0, 1, 0]
    expect_error(gd, "listed twice", "'data'", node=0, field="arg_nodes[2]")


def test_arg_node_duplicate_name(gd: dict[str, Any]) -> None:
    gd["nodes"][1]["name"] = "data"
    expect_error(gd, "same name as arg node 0", node=1, field="arg_nodes[1]")


@pytest.mark.parametrize("heads", [[], None, {"0": 1}])
def test_heads_not_list(gd: dict[str, Any], heads: Any) -> None:
    gd["heads"] = heads
    expect_error(gd, "non-empty list", field="heads")


def test_head_out_of_range(gd: dict[str, Any]) -> None:
    gd["heads"][1] = [6, 0, 0]
    expect_error(gd, "has 6 nodes", field="heads[1]")


def test_head_index_out_of_range(gd: dict[str, Any]) -> None:
    gd["heads"][1] = [3, 2, 0]
    expect_error(gd, "output 2 of node 3 'split'", field="heads[1]")


@pytest.mark.parametrize("head", [[5.0, 0], [5, False], [5], "5"])
def test_head_bad_form(gd: dict[str, Any], head: Any) -> None:
    gd["heads"][0] = head
    expect_error(gd, "[node_id, index]", field="heads[0]")


@pytest.mark.parametrize("meta", [[], "x", 1])
def test_metadata_not_object(gd: dict[str, Any], meta: Any) -> None:
    gd["metadata"] = meta
    expect_error(gd, "must be an object", field="metadata")


def test_every_error_has_a_hint(gd: dict[str, Any]) -> None:
    gd["nodes"][2]["attrs"]["num_inputs"] = "3"
    assert "make them agree" in str(expect_error(gd))


# ---------------------------------------------------------------- fuzzing

_WORDS = ["tvm_op", "null", "list_int", "list_shape", "list_str", "size_t", "float32", "bool",
          "0", "1", "2", "__nop", "__copy", "nodes", "attrs", "attr", "inputs", "op", "name",
          "func_name", "num_inputs", "num_outputs", "flatten_data", "heads", "arg_nodes",
          "node_row_ptr", "shape", "dltype", "storage_id", "device_index", "metadata"]
_SCALARS = (st.none() | st.booleans() | st.integers(-3, 10) | st.integers(-2**70, 2**70)
            | st.floats(allow_nan=True) | st.text(max_size=4) | st.sampled_from(_WORDS))
_JSON = st.recursive(_SCALARS, lambda c: st.lists(c, max_size=4)
                     | st.dictionaries(st.sampled_from(_WORDS) | st.text(max_size=3), c,
                                       max_size=4), max_leaves=12)


def _slots(obj: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) pair in a JSON tree, containers included."""
    out: list[tuple[Any, Any]] = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) \
        if isinstance(obj, list) else ()
    for k, v in items:
        out.append((obj, k))
        out.extend(_slots(v))
    return out


def _mutate(d: Any, data: st.DataObject) -> None:
    slots = _slots(d)
    if not slots:
        return
    parent, key = slots[data.draw(st.integers(0, len(slots) - 1))]
    kind = data.draw(st.sampled_from(["delete", "replace", "int", "wrap", "insert"]))
    if kind == "delete":
        del parent[key]
    elif kind == "replace":
        parent[key] = data.draw(_JSON)
    elif kind == "int":
        parent[key] = data.draw(st.integers(-5, 12))
    elif kind == "wrap":
        parent[key] = [parent[key]] if data.draw(st.booleans()) else {"x": parent[key]}
    elif isinstance(parent, list):
        parent.insert(key, data.draw(_JSON))
    else:
        parent[data.draw(st.sampled_from(_WORDS))] = data.draw(_JSON)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutations_only_raise_graph_error(data: st.DataObject) -> None:
    d = copy.deepcopy(valid_graph())
    for _ in range(data.draw(st.integers(1, 3))):
        _mutate(d, data)
    try:
        g = parse(d)
    except GraphError:
        return
    assert parse_graph(dump_graph(g)) == g  # whatever parses must also round-trip


@settings(max_examples=100, deadline=None)
@given(_JSON)
def test_fuzz_arbitrary_json(value: Any) -> None:
    try:
        parse(value)
    except GraphError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64) | st.text(max_size=64))
def test_fuzz_arbitrary_text(text: str | bytes) -> None:
    try:
        parse_graph(text)
    except GraphError:
        pass


# ---------------------------------------------------------------- strict JSON, bounded size
# (issue #24: Python's json lets the last of two equal keys win, accepts NaN, reads any size)

def _with_second(text: str, where: str, extra: str) -> str:
    """``text`` with ``extra`` (a '"key": value' pair) added after the last ``where``; at the
    end of the top-level object when ``where`` is empty."""
    if not where:
        return text[:-1] + ", " + extra + "}"
    at = text.rindex(where) + len(where)
    return text[:at] + extra + ", " + text[at:]


@pytest.mark.parametrize("where, extra, key", [
    ("", '"heads": [[0, 0, 0]]', '"heads"'),                       # a bogus second heads
    ('{"op": "tvm_op", ', '"name": "other"', '"name"'),             # inside a node
    ('"attrs": {', '"storage_id": ["list_int", [0]]', '"storage_id"'),  # graph attrs
])
def test_a_duplicate_key_is_refused_not_last_wins(gd: dict[str, Any], where: str, extra: str,
                                                  key: str) -> None:
    text = _with_second(json.dumps(gd), where, extra)
    assert json.loads(text) is not None  # Python's json would take it, the last one winning
    expect_error(text, "duplicate key", key)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_literals_are_not_json(gd: dict[str, Any], literal: str) -> None:
    gd["metadata"] = {"x": 0}
    expect_error(json.dumps(gd).replace('"x": 0', f'"x": {literal}'), literal,
                 "not a JSON number")


def test_an_oversized_graph_is_refused_before_parsing(tmp_path: Path, gd: dict[str, Any],
                                                      monkeypatch) -> None:
    from minigraph.artifacts import graph_json
    monkeypatch.setattr(graph_json, "MAX_GRAPH_BYTES", 1 << 20)
    path = tmp_path / "graph.json"
    path.write_text(" " * (2 << 20) + json.dumps(gd))  # whitespace: valid JSON, 2 MiB of it
    with pytest.raises(InputError, match=r"2 MiB is more than the 1 MiB"):
        load_graph(path)
    with pytest.raises(GraphError, match="more than the 1 MiB a graph.json may be"):
        parse_graph(path.read_text())
    assert graph_json.MAX_GRAPH_BYTES == 1 << 20 and load_graph  # the limit is the module's


def test_the_real_limit_takes_real_graphs() -> None:
    from minigraph.artifacts.graph_json import MAX_GRAPH_BYTES
    assert MAX_GRAPH_BYTES >= 64 << 20  # ResNet-50's is ~60 KiB; the largest real ones MiBs


def test_a_negative_row_pointer_is_called_negative(gd: dict[str, Any]) -> None:
    gd["node_row_ptr"][3] = -5
    err = expect_error(gd, "-5 is negative", "expected 3", field="node_row_ptr[3]")
    assert "is not an int" not in str(err)
    gd["node_row_ptr"][3] = "3"
    expect_error(gd, '"3" is not an integer', field="node_row_ptr[3]")

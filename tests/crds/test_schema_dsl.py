"""The schema DSL builds the OpenAPI nodes it promises and refuses inconsistent ones."""

from __future__ import annotations

import pytest

from kq.crds.schema import (
    QUANTITY_PATTERN,
    PrinterColumn,
    Version,
    array,
    crd,
    integer,
    obj,
    quantity,
    string,
)
from tests.crds.schema_check import apply


def test_list_map_and_object_nodes() -> None:
    item = obj({"name": string(), "count": integer(minimum=0)}, required=("name",))
    assert array(item, map_keys=("name",), max_items=3) == {
        "type": "array",
        "items": item,
        "x-kubernetes-list-map-keys": ["name"],
        "x-kubernetes-list-type": "map",
        "maxItems": 3,
    }
    assert item["required"] == ["name"]
    assert item["properties"]["count"] == {"type": "integer", "format": "int32", "minimum": 0}


def test_quantity_accepts_kubernetes_quantities_only() -> None:
    schema = obj({"q": quantity()})
    assert schema["properties"]["q"]["pattern"] == QUANTITY_PATTERN
    for good in (24, "10000Gi", "100m", "1.5", "2e3"):
        assert apply({"q": good}, schema).errors == [], good
    for bad in ("ten", "1.5.5", "5 Gi"):
        assert len(apply({"q": bad}, schema).errors) == 1, bad


def test_inconsistent_nodes_are_refused() -> None:
    with pytest.raises(ValueError, match="not declared"):
        obj({"a": string()}, required=("b",))
    with pytest.raises(ValueError, match="map_keys"):
        array(obj({"a": string()}, required=("a",)), list_type="map")
    with pytest.raises(ValueError, match="list_type 'map'"):
        array(obj({"a": string()}, required=("a",)), list_type="set", map_keys=("a",))


def test_crd_needs_exactly_one_storage_version() -> None:
    versions = [Version("v1", obj()), Version("v2", obj())]
    with pytest.raises(ValueError, match="storage"):
        crd(group="g.io", kind="K", plural="ks", namespaced=True, versions=versions)


def test_crd_renders_names_status_subresource_and_columns() -> None:
    column = PrinterColumn("Wide", "string", ".spec.w", "shown with -o wide", priority=1)
    rendered = crd(
        group="g.io",
        kind="Thing",
        plural="things",
        namespaced=False,
        versions=[Version("v1", obj(), obj(), printer_columns=(column,))],
        short_names=("th",),
    )
    assert rendered["metadata"]["name"] == "things.g.io"
    assert rendered["spec"]["names"] == {
        "kind": "Thing",
        "listKind": "ThingList",
        "plural": "things",
        "singular": "thing",
        "shortNames": ["th"],
    }
    (version,) = rendered["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"] == [
        {
            "name": "Wide",
            "type": "string",
            "jsonPath": ".spec.w",
            "description": "shown with -o wide",
            "priority": 1,
        }
    ]

"""Merge then restore gives back any template exactly; conflicts are refused."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kq.jobframework.podset import (
    PodSetInfo,
    PodSetInfoError,
    info_from_template,
    merge_into_template,
    restore_template,
)

keys = st.sampled_from(["a", "b", "c", "zone", "pool"])
string_maps = st.dictionaries(keys, st.sampled_from(["1", "2", "x"]), max_size=3)
tolerations = st.lists(
    st.fixed_dictionaries({"key": keys, "operator": st.just("Exists")}), max_size=2
)


@st.composite
def templates(draw: st.DrawFn) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    meta = {
        k: v for k in ("labels", "annotations") if (v := draw(st.none() | string_maps)) is not None
    }
    if meta:
        template["metadata"] = meta
    for key, strategy in (("nodeSelector", string_maps), ("tolerations", tolerations)):
        value = draw(st.none() | strategy)
        if value is not None:
            template["spec"][key] = value
    return template


@st.composite
def infos(draw: st.DrawFn) -> PodSetInfo:
    # Distinct key spaces from the templates' so that a merge never conflicts.
    prefixed = string_maps.map(lambda m: {f"kueue/{k}": v for k, v in m.items()})
    return PodSetInfo(
        "main",
        1,
        labels=draw(prefixed),
        annotations=draw(prefixed),
        node_selector=draw(prefixed),
        tolerations=draw(tolerations),
        scheduling_gates=draw(st.lists(st.fixed_dictionaries({"name": keys}), max_size=2)),
    )


@given(templates(), infos())
def test_restore_undoes_merge(template: dict[str, Any], info: PodSetInfo) -> None:
    original = info_from_template("main", 1, template)
    merged = merge_into_template(template, info)
    assert set((info.labels or {}).items()) <= set(
        merged.get("metadata", {}).get("labels", {}).items()
    )
    assert restore_template(merged, original) == template


def test_conflicting_label_is_refused() -> None:
    template = {"metadata": {"labels": {"kueue.x-k8s.io/podset": "other"}}}
    with pytest.raises(PodSetInfoError, match="conflict for labels"):
        merge_into_template(
            template, PodSetInfo("main", 1, labels={"kueue.x-k8s.io/podset": "main"})
        )


def test_merge_does_not_duplicate_tolerations_or_gates() -> None:
    toleration = {"key": "k", "operator": "Exists"}
    template = {"spec": {"tolerations": [toleration], "schedulingGates": [{"name": "g"}]}}
    info = PodSetInfo("main", 1, tolerations=[toleration], scheduling_gates=[{"name": "g"}])
    assert merge_into_template(template, info) == template

"""Bad input names the file, the line and the field, and nothing is simulated."""

from __future__ import annotations

from pathlib import Path

import pytest

from kq.cli import main
from kq.simulate.run import prepare
from kq.simulate.setup import load_setup, patched
from kq.simulate.source import InputError
from tests.simulate.helpers import FLAVOR, cluster_queue, local_queue, write_setup

GOOD_TRACE = (
    "workloads:\n"
    "- {name: a, arrival: 0, queue: default/cq, runtime: 5m, count: 1, requests: {cpu: 1}}\n"
)


def _setup(tmp_path: Path) -> Path:
    return write_setup(tmp_path / "setup.yaml", FLAVOR, cluster_queue("cq", 4), local_queue("cq"))


def _error(tmp_path: Path, trace_text: str, suffix: str = ".yaml") -> str:
    trace = tmp_path / f"trace{suffix}"
    trace.write_text(trace_text)
    with pytest.raises(InputError) as caught:
        prepare("t", load_setup([_setup(tmp_path)]), trace)
    return str(caught.value)


@pytest.mark.parametrize(
    ("trace", "expected"),
    [
        ("workloads:\n- name: a\n  arrival: 0\n  queue: cq\n  requests: {cpu: 1}\n",
         "trace.yaml:2: runtime: Required"),
        ("- {name: a, arrival: 0, queue: nope, runtime: 1, requests: {cpu: 1}}\n",
         "trace.yaml:1: queue: LocalQueue default/nope is not in the setup"),
        ("- name: a\n  arrival: soon\n  queue: cq\n  runtime: 1\n  requests: {cpu: 1}\n",
         "trace.yaml:2: arrival: not a Go duration: 'soon'"),
        ("- name: a\n  arrival: 0\n  queue: cq\n  runtime: 1\n  requests: {cpu: lots}\n",
         "trace.yaml:1: podSets: invalid spec"),
        ("- name: a\n  arrival: 0\n  queue: cq\n  runtime: 1\n  priorityClass: gold\n"
         "  requests: {cpu: 1}\n", "trace.yaml:5: priorityClass: no WorkloadPriorityClass"),
        ("- {name: a, arrival: 0, queue: cq, runtime: 1, requests: {cpu: 1}, colour: red}\n",
         "trace.yaml:1: colour: unknown field"),
        ("- {name: a, arrival: 0, queue: cq, runtime: 1, requests: {cpu: 1}}\n"
         "- {name: a, arrival: 1, queue: cq, runtime: 1, requests: {cpu: 1}}\n",
         "trace.yaml:2: name: workload default/a appears twice"),
        ("- name: a\n  arrival: [0\n", "trace.yaml:3: not valid YAML"),
        ("- name: a\n  arrival: 0\n  queue: cq\n  runtime: 1\n  podSets:\n"
         "  - {count: 0, requests: {cpu: 1}}\n",
         "trace.yaml:5: podSets[0].count: must be at least 1"),
    ],
)  # fmt: skip
def test_bad_yaml_trace(tmp_path: Path, trace: str, expected: str) -> None:
    assert expected in _error(tmp_path, trace)


def test_bad_csv_trace(tmp_path: Path) -> None:
    header = "name,arrival,queue,runtime,count,requests\n"
    message = _error(tmp_path, header + "a,0,cq,60,1,cpu=1\nb,0,cq,60,1,cpu2\n", ".csv")
    assert "trace.csv:3: requests: 'cpu2' is not resource=amount" in message
    missing = _error(tmp_path, "name,arrival,queue\na,0,cq\n", ".csv")
    assert "trace.csv:1: runtime: missing column" in missing


def test_bad_setup_objects(tmp_path: Path) -> None:
    bad_quota = cluster_queue("cq", 4)
    bad_quota["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "x"
    setup = write_setup(tmp_path / "s.yaml", FLAVOR, local_queue("cq"), bad_quota)
    trace = tmp_path / "t.yaml"
    trace.write_text(GOOD_TRACE)
    with pytest.raises(InputError, match=r"s\.yaml:\d+: ClusterQueue cq: .*nominalQuota"):
        prepare("t", load_setup([setup]), trace)
    orphan = write_setup(tmp_path / "o.yaml", FLAVOR, cluster_queue("cq", 4), local_queue("gone"))
    with pytest.raises(InputError, match=r"LocalQueue default/gone: spec\.clusterQueue"):
        prepare("t", load_setup([orphan]), trace)
    no_flavor = write_setup(tmp_path / "f.yaml", cluster_queue("cq", 4), local_queue("cq"))
    with pytest.raises(InputError, match="missing ResourceFlavor"):
        prepare("t", load_setup([no_flavor]), trace)


def test_bad_configuration_and_patch(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
        "fairSharing:\n  enabel: true\n"
    )
    trace = tmp_path / "t.yaml"
    trace.write_text(GOOD_TRACE)
    with pytest.raises(InputError, match=r"config\.yaml: configuration: fairSharing"):
        prepare("t", load_setup([_setup(tmp_path)], config), trace)
    patch = tmp_path / "patch.yaml"
    patch.write_text(
        "kind: ClusterQueue\nmetadata: {name: cq}\nspec:\n  queueingStrategy: Sideways\n"
    )
    with pytest.raises(InputError, match="unknown queueing strategy 'Sideways'"):
        prepare("b", patched(load_setup([_setup(tmp_path)]), patch), trace)


def test_cli_stops_before_simulating(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.yaml"
    trace.write_text("- {name: a, arrival: 0, queue: cq, requests: {cpu: 1}}\n")
    out = tmp_path / "out"
    code = main(["simulate", str(_setup(tmp_path)), "--trace", str(trace), "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "t.yaml:1: runtime: Required" in err
    assert "nothing was simulated" in err
    assert not out.exists()


def test_v1beta2_objects_are_converted(tmp_path: Path) -> None:
    cq = cluster_queue("cq", 4)
    cq["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    setup = write_setup(tmp_path / "s.yaml", FLAVOR, cq, local_queue("cq"))
    trace = tmp_path / "t.yaml"
    trace.write_text(GOOD_TRACE)
    prepared = prepare("t", load_setup([setup]), trace)
    assert prepared.model.cluster_queues["cq"].quotas[("default", "cpu")].nominal == 4000


def test_csv_rows_with_one_name_in_two_namespaces_are_two_workloads(tmp_path: Path) -> None:
    setup = write_setup(tmp_path / "setup.yaml", FLAVOR, cluster_queue("cq", 4),
                        local_queue("cq"), local_queue("cq", "other"))  # fmt: skip
    trace = tmp_path / "trace.csv"
    trace.write_text(
        "name,arrival,queue,runtime,count,requests\n"
        "a,0,default/cq,60,1,cpu=1\n"
        "a,1,other/cq,60,1,cpu=2\n"
        "a,0,default/cq,60,1,cpu=1\n"
    )
    arrivals = prepare("t", load_setup([setup]), trace).arrivals
    pod_sets = {a.workload.key: len(a.workload.pod_sets) for a in arrivals}
    assert pod_sets == {"default/a": 2, "other/a": 1}

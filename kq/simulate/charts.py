"""The charts of one run, from its figures: which curves, with which names."""

from __future__ import annotations

from kq.simulate.figures import NodeFigures
from kq.simulate.files import display, unit
from kq.simulate.run import Run
from kq.simulate.svg import Bar, Curve, step_chart, timeline


def admissions_timeline(run: Run) -> str:
    rows: dict[str, list[Bar]] = {name: [] for name in run.model.cluster_queues}
    for record in run.recorder.workloads.values():
        for stint in record.stints:
            end = stint.end if stint.end is not None else run.end
            label = f"{record.key}: {stint.start:g}s to {end:g}s"
            if stint.evicted_by is not None:
                label += f", preempted by {stint.evicted_by} ({stint.reason})"
            rows.setdefault(record.cluster_queue, []).append(
                Bar(stint.start, end, label, stint.evicted_by is not None)
            )
    return timeline("Admissions per ClusterQueue", rows, _start(run), run.end)


def _start(run: Run) -> float:
    return min((r.arrival for r in run.recorder.workloads.values()), default=0.0)


def _queues(figures: dict[str, NodeFigures], kind: str = "ClusterQueue") -> list[NodeFigures]:
    return [n for n in figures.values() if n.kind == kind]


def pending_chart(run: Run, figures: dict[str, NodeFigures]) -> str:
    curves = [Curve(n.name, n.series.times, n.series.pending) for n in _queues(figures)]
    return step_chart("Pending workloads", curves, _start(run), run.end, "workloads")


def resources(figures: dict[str, NodeFigures]) -> list[str]:
    return sorted({fr[1] for n in figures.values() for fr in n.nominal})


def utilisation_chart(run: Run, figures: dict[str, NodeFigures], resource: str) -> str:
    """Usage as a percentage of nominal quota, per ClusterQueue and flavor (above 100%:
    borrowing)."""
    curves = []
    for node in _queues(figures):
        for fr, nominal in node.nominal.items():
            if fr[1] == resource and nominal > 0:
                used = node.series.used[fr]
                percent = [round(100 * u / nominal, 1) for u in used]
                curves.append(Curve(f"{node.name} {fr[0]}", node.series.times, percent))
    title = f"{resource}: usage, % of nominal quota"
    return step_chart(title, curves, _start(run), run.end, "%", top=100)


def cohort_chart(run: Run, figures: dict[str, NodeFigures], resource: str) -> str:
    """Per cohort and flavor: usage in display units, with the cohort's quota as a line."""
    curves = []
    for node in _queues(figures, "Cohort"):
        for fr, quota in node.nominal.items():
            if fr[1] != resource:
                continue
            values = [display(resource, u) for u in node.series.used[fr]]
            curves.append(Curve(f"{node.name} {fr[0]}", node.series.times, values))
            flat = [display(resource, quota)] * len(node.series.times)
            curves.append(Curve(f"{node.name} {fr[0]} quota", node.series.times, flat))
    title = f"{resource}: cohort usage and quota ({unit(resource)})"
    return step_chart(title, curves, _start(run), run.end, unit(resource))


def borrowed_chart(run: Run, figures: dict[str, NodeFigures], resource: str) -> str:
    curves = []
    for node in _queues(figures):
        for fr in node.nominal:
            if fr[1] == resource and any(node.series.borrowed[fr]):
                values = [display(resource, b) for b in node.series.borrowed[fr]]
                curves.append(Curve(f"{node.name} {fr[0]}", node.series.times, values))
    title = f"{resource}: borrowed above nominal quota ({unit(resource)})"
    return step_chart(title, curves, _start(run), run.end, unit(resource))


def all_charts(run: Run, figures: dict[str, NodeFigures]) -> dict[str, str]:
    """``file stem -> SVG``, in the order the report shows them."""
    charts = {"timeline": admissions_timeline(run), "pending": pending_chart(run, figures)}
    has_cohorts = bool(_queues(figures, "Cohort"))
    for resource in resources(figures):
        slug = resource.replace("/", "-").replace(".", "-")
        charts[f"utilisation-{slug}"] = utilisation_chart(run, figures, resource)
        if has_cohorts:
            charts[f"cohort-{slug}"] = cohort_chart(run, figures, resource)
            charts[f"borrowed-{slug}"] = borrowed_chart(run, figures, resource)
    return charts

"""Which LocalQueue a job names, and whether kq manages the job at all."""

from __future__ import annotations

from dataclasses import dataclass

from kq.jobframework.constants import QUEUE_NAME_KEY
from kq.jobframework.objects import Obj, annotations_of, labels

DEPRECATED_ANNOTATION_MESSAGE = (
    f'the annotation "{QUEUE_NAME_KEY}" is deprecated (Kueue v0.15 and later ignore it); '
    f'kq honours it, but use the label "{QUEUE_NAME_KEY}" instead'
)


@dataclass(frozen=True, slots=True)
class QueueName:
    name: str
    """Empty when the job names no queue."""
    from_annotation: bool = False

    @property
    def warning(self) -> str | None:
        """The deprecation text for an event when the name came from the annotation."""
        return DEPRECATED_ANNOTATION_MESSAGE if self.from_annotation else None


def queue_name(job: Obj) -> QueueName:
    """The label first; then the annotation that older Kueue read and published manifests use."""
    label = labels(job).get(QUEUE_NAME_KEY, "")
    if label:
        return QueueName(label)
    annotation = annotations_of(job).get(QUEUE_NAME_KEY, "")
    return QueueName(annotation, from_annotation=bool(annotation))


def is_managed(
    job: Obj, *, manage_jobs_without_queue_name: bool = False, namespace_managed: bool = True
) -> bool:
    """Jobs naming a queue are managed; others only under ``manageJobsWithoutQueueName``.

    ``namespace_managed`` is whether the job's namespace matches
    ``managedJobsNamespaceSelector``; here it only matters for jobs without a queue name, as
    in upstream's webhook. The reconciler checks the namespace of every job before this.
    """
    if queue_name(job).name:
        return True
    return manage_jobs_without_queue_name and namespace_managed

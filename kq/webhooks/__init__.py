"""AdmissionReview (admission.k8s.io/v1) handlers: ``handle(review) -> review``, no I/O.

The webhook server (TLS, certificates, HTTP) lives in ``kq.runtime``; it serves ``routes()``:

- ``/mutate/jobs``: jobs of every registered kind, CREATE; suspends the ones kq manages.
- ``/validate/jobs``: jobs, CREATE and UPDATE; Kueue's field rules, deprecation warnings.
- ``/validate/kueue``: Kueue objects, CREATE and UPDATE; warnings where kq differs from Kueue,
  and ``workloads/status`` changes of ``status.admission`` refused to anyone but kq.
"""

from kq.jobframework.webhook import WebhookFacts
from kq.webhooks.jobs import JobWebhooks
from kq.webhooks.kueue import kueue_validator, validate_kueue
from kq.webhooks.review import Handler
from kq.webhooks.routes import MUTATE_JOBS, VALIDATE_JOBS, VALIDATE_KUEUE, routes

__all__ = [
    "MUTATE_JOBS",
    "VALIDATE_JOBS",
    "VALIDATE_KUEUE",
    "Handler",
    "JobWebhooks",
    "WebhookFacts",
    "kueue_validator",
    "routes",
    "validate_kueue",
]

"""TLS contexts for the calls the embedded server makes (webhooks, aggregated APIs)."""

from __future__ import annotations

import base64
import functools
import ssl


@functools.lru_cache(maxsize=64)
def client_context(ca_bundle: str = "") -> ssl.SSLContext:
    """A verifying context trusting only ``ca_bundle`` (base64 PEM), or the system's roots.

    Cached because building one with the system roots reads the whole CA store (~16 ms), which
    every webhook call on a job's path paid. Contexts are not mutated after creation.
    """
    if not ca_bundle:
        return ssl.create_default_context()
    return ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())

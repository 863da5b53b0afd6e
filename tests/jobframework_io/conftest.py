"""The built-in job integrations, as ``kq run`` loads them."""

from __future__ import annotations

import pytest

from kq.jobframework import GenericJob
from kq.jobframework.registry import job_integrations
from kq.plugins import build_plugin_manager


@pytest.fixture(scope="session")
def integrations() -> dict[str, GenericJob]:
    return job_integrations(build_plugin_manager())

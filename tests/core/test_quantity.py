"""Quantity parsing rounds up like Kubernetes; formatting is canonical."""

from __future__ import annotations

import pytest

from kq.api.quantity import QuantityError, format_amount, to_amount


@pytest.mark.parametrize(
    ("resource", "text", "amount"),
    [
        ("cpu", "1", 1000),
        ("cpu", "500m", 500),
        ("cpu", "0.1", 100),
        ("cpu", "1.5", 1500),
        ("cpu", "1e3", 1_000_000),
        ("cpu", "1u", 1),  # rounds up to a whole millicore
        ("memory", "1Gi", 1024**3),
        ("memory", "1G", 10**9),
        ("memory", "1.5Ki", 1536),
        ("memory", "100m", 1),
        ("google.com/tpu", "4", 4),
        ("google.com/tpu", 4, 4),
        ("memory", "2E", 2 * 10**18),
    ],
)
def test_parse(resource: str, text: str | int, amount: int) -> None:
    assert to_amount(resource, text) == amount


@pytest.mark.parametrize("text", ["", "1.2.3", "1Qi", "abc", "1 Gi"])
def test_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        to_amount("cpu", text)


@pytest.mark.parametrize(
    ("resource", "amount", "text"),
    [
        ("cpu", 1500, "1500m"),
        ("cpu", 2000, "2"),
        ("cpu", 2_000_000, "2k"),
        ("cpu", 0, "0"),
        ("memory", 4396 * 1024**2, "4396Mi"),
        ("memory", 1024**3, "1Gi"),
        ("memory", 1000, "1k"),
        ("nvidia.com/gpu", 16, "16"),
    ],
)
def test_format(resource: str, amount: int, text: str) -> None:
    assert format_amount(resource, amount) == text


@pytest.mark.parametrize("value", [True, None, ["1"]])
def test_non_quantities_are_rejected(value: object) -> None:
    with pytest.raises(QuantityError, match="quantities must be strings or numbers"):
        to_amount("cpu", value)

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests" in item.path.parts and "pg_tests" not in item.path.parts:
            item.add_marker(pytest.mark.unit)

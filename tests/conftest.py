from __future__ import annotations

import pytest

from tests.standins import standin, standin_server  # noqa: F401 - the stand-in server's fixtures


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests" in item.path.parts and "pg_tests" not in item.path.parts:
            item.add_marker(pytest.mark.unit)

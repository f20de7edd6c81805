"""docs/api.md states the contract; its table of certificates is the solver descriptions'."""
import pathlib

import pytest

import dualsolve  # noqa: F401  (registers every solver)
from dualsolve._driver import certificate_table

PAGE = pathlib.Path(__file__).parent.parent / "docs" / "api.md"


def test_the_certificate_table_is_the_descriptions():
    if not PAGE.exists():
        pytest.skip("docs/ is not in this checkout")
    text = PAGE.read_text()
    table = certificate_table()
    assert table in text, ("docs/api.md's table differs from the solver descriptions; paste "
                           "dualsolve._driver.certificate_table():\n" + table)

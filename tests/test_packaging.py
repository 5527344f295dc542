"""What an install ships: every folder of Python code in the four packages is a package that
pyproject's `find` includes. A folder without `__init__.py` imports from a checkout (as a namespace
package) but is left out of a wheel, so an installed controller would miss it."""

from __future__ import annotations

from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protocol", "controller", "broker_sim", "analytics")


def test_every_folder_of_python_code_is_a_package_the_build_includes() -> None:
    folders = {
        ".".join(path.parent.relative_to(ROOT).parts)
        for top in PACKAGES
        for path in (ROOT / top).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    included = set(find_packages(str(ROOT), include=[f"{top}*" for top in PACKAGES]))
    assert "controller.control" in folders
    assert sorted(folders - included) == []

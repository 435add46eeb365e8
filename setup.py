"""Package layout that pyproject.toml cannot state alone: the import package ``stichtag``
has app/ as its source root, and the top-level migrations/ ships as ``stichtag.migrations``."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages("app", include=["stichtag", "stichtag.*"]),
              "stichtag.migrations"],
    package_dir={"": "app", "stichtag.migrations": "migrations"},
)

"""Suite-wide checks at collection: every test that needs a GPU carries the `cuda` mark (cuda_marks.py)."""
from cuda_marks import pytest_collection_modifyitems  # noqa: F401  (a pytest hook)

"""The `cuda` mark is how the GPU check finds its tests (`pytest -m cuda`): a test that skips without a
GPU but lacks the mark would never run there, so collecting one is an error (tests/conftest.py)."""
import inspect
import re

NEEDS_GPU = re.compile(r"(needs?|requires?) an? (CUDA )?GPU", re.I)
SKIP_CALL = re.compile(r"\bskip\(\s*(reason=)?f?[\"']([^\"']*)")   # pytest.skip("...") in a test's body


def _needs_gpu(item) -> bool:
    reasons = [str(mark.kwargs.get("reason", "")) for mark in item.iter_markers("skipif")]
    try:
        reasons += [match.group(2) for match in SKIP_CALL.finditer(inspect.getsource(item.function))]
    except (AttributeError, OSError, TypeError):
        pass
    return any(NEEDS_GPU.search(text) for text in reasons)


def unmarked_gpu_tests(items) -> list[str]:
    """Node ids of the tests that skip for want of a GPU but do not carry the `cuda` mark."""
    return [item.nodeid for item in items if item.get_closest_marker("cuda") is None and _needs_gpu(item)]


def pytest_collection_modifyitems(config, items):
    unmarked = unmarked_gpu_tests(items)
    if unmarked:
        raise __import__("pytest").UsageError(
            "these tests need a GPU but lack @pytest.mark.cuda, so the GPU check (pytest -m cuda) would "
            "never run them: " + ", ".join(unmarked))

"""The `cuda` mark is how the GPU check finds its tests (`pytest -m cuda`): a test that skips without a
GPU but lacks the mark would never run there, so collecting one is an error (tests/conftest.py)."""
import functools
import inspect
import re

NEEDS_GPU = re.compile(r"(needs?|requires?) an? (CUDA )?GPU", re.I)
SKIP_CALL = re.compile(r"\bskip\(\s*(reason=)?f?[\"']([^\"']*)")   # pytest.skip("...") in a test's body


@functools.lru_cache(maxsize=None)
def _skip_reasons_in_body(function) -> tuple[str, ...]:
    """The reasons of pytest.skip(...) calls in `function`'s source: read once per function, not once per
    parameter set (tokenizing each collected item's source was 0.6 s of every collection of the suite, 0.25 s now)."""
    try:
        return tuple(match.group(2) for match in SKIP_CALL.finditer(inspect.getsource(function)))
    except (OSError, TypeError):
        return ()


def _needs_gpu(item) -> bool:
    reasons = [str(mark.kwargs.get("reason", "")) for mark in item.iter_markers("skipif")]
    function = getattr(item, "function", None)
    if function is not None:
        reasons += _skip_reasons_in_body(function)
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

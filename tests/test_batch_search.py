"""The one largest-batch search (analysis.batch_search): against a brute-force scan over the candidates, each
batch tested once, two tests from a right guess; and its callers (memory budget, host halving, predicted sweep)
give what a scan gives."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.batch_search import halvings, largest_batch_where, powers_of_two


@given(st.lists(st.integers(1, 5000), min_size=1, max_size=60, unique=True), st.integers(0, 5001),
       st.integers(-3, 70))
def test_the_search_finds_what_a_scan_finds_and_tests_no_batch_twice(candidates, threshold, start):
    candidates = sorted(candidates)
    tested = []
    found = largest_batch_where(lambda b: tested.append(b) or b <= threshold, candidates, start)
    scan = [b for b in candidates if b <= threshold]
    assert found == (scan[-1] if scan else None)
    assert len(tested) == len(set(tested))


def test_a_right_guess_costs_two_tests():
    tested = []
    assert largest_batch_where(lambda b: tested.append(b) or b <= 700, range(1, 1 << 20), start=699) == 700
    assert tested == [700, 701]


def test_candidate_lists():
    assert powers_of_two(4096) == [1 << k for k in range(13)] and powers_of_two(5) == [1, 2, 4]
    assert powers_of_two(1) == [1] and halvings(1) == [1]
    assert halvings(100) == [1, 3, 6, 12, 25, 50, 100]
    assert largest_batch_where(lambda b: True, []) is None


@pytest.mark.parametrize("budget_mib, expected", [(0, 0), (8, 8), (64, 16)])
def test_predicted_sweep_is_the_largest_power_of_two_under_the_target(budget_mib, expected):
    """A stand-in prediction: 4 ms per image, so a 64 ms target holds batch 16 (64 ms), not 32."""
    import dataclasses

    from zoo.predict import rows as predicted

    filler = {f.name: 0 for f in dataclasses.fields(predicted.PredictedRow) if f.default is dataclasses.MISSING}

    def predict(batch):
        return predicted.PredictedRow(**{**filler, "batch_size": batch, "latency_ms": 4.0 * batch,
                                         "fits_memory": batch <= budget_mib})

    row = predicted.best_batch(predict, target_ms=64.0).to_json()
    assert row["batch_size"] == max(expected, 1) and row["sweep_latency_target_ms"] == 64.0
    assert ("sweep_note" in row) == (expected == 0)

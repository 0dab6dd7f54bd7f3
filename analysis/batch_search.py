"""The one largest-batch search: the largest of some candidate batches that passes a test which holds up to
some batch and fails beyond it (memory and latency grow with the batch). Used for the largest batch under a
memory budget (analysis.count.memory, zoo.select's --batch-size auto), the host-memory halving before a CPU
run (analysis.timing.host_memory) and the predicted batch under a latency target (zoo.compare --predict).

Search: from a starting guess, gallop (offsets 1, 2, 4, ... candidates) up while the test holds or down
while it fails, then bisect between the last pass and the first failure. Each test is a counted forward or
a prediction, so a good guess costs two tests, and no batch is tested twice.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence


def powers_of_two(limit: int) -> list[int]:
    """1, 2, 4, ... up to `limit`."""
    return [1 << k for k in range(max(limit, 1).bit_length()) if 1 << k <= limit]


def halvings(batch: int) -> list[int]:
    """batch, batch // 2, ... down to 1, in ascending order (the batches halving tries)."""
    found = [batch]
    while found[-1] > 1:
        found.append(found[-1] // 2)
    return found[::-1]


def largest_batch_where(fits: Callable[[int], bool], candidates: Sequence[int], start: int = 0) -> Optional[int]:
    """The largest of `candidates` (ascending) for which fits(batch) holds, assuming it holds up to some
    batch and fails for every larger one; None when it fails for the first. start: the index of the guess
    to test first (clamped to the candidates)."""
    if not candidates:
        return None
    tested: dict[int, bool] = {}

    def ok(index: int) -> bool:
        if index not in tested:
            tested[index] = bool(fits(candidates[index]))
        return tested[index]

    last = len(candidates) - 1
    start = min(max(start, 0), last)
    step = 1
    if ok(start):                  # gallop up: `passed` holds, look further
        passed, failed = start, None
        while passed < last:
            probe = min(passed + step, last)
            if not ok(probe):
                failed = probe
                break
            passed, step = probe, step * 2
        if failed is None:
            return candidates[passed]
    else:                          # gallop down: `failed` fails, look lower
        failed, passed = start, None
        while failed > 0:
            probe = max(failed - step, 0)
            if ok(probe):
                passed = probe
                break
            failed, step = probe, step * 2
        if passed is None:
            return None
    while failed - passed > 1:     # bisect: passed holds, failed does not
        middle = (passed + failed) // 2
        passed, failed = (middle, failed) if ok(middle) else (passed, middle)
    return candidates[passed]

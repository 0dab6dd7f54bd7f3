"""The bytes PyTorch's CUDA caching allocator books for one request: what torch.cuda.max_memory_allocated adds up
(its "allocated_bytes" stat counts each block's size, not the size asked for).

From pytorch/pytorch@001074d25084fdb87a799823e395a50f5ec044d3 c10/cuda/CUDACachingAllocator.cpp: every size is
rounded up to kMinBlockSize = 512 bytes (round_size); requests of at most kSmallSize = 1 MiB come from 2 MiB
segments (kSmallBuffer), those up to kMinLargeAlloc = 10 MiB from 20 MiB segments (kLargeBuffer), and larger
ones get a segment of their own rounded up to kRoundLarge = 2 MiB. A block is split off its segment only when
what is left is more than kSmallSize (the large pool), so a large request whose 2 MiB round-up leaves 1 MiB or
less keeps the whole segment as its block. A zero-byte request allocates nothing.
NB: reuse of cached blocks larger than the request (best fit, the same split rule) and cuDNN/cuBLAS workspaces
are not modelled; reserved memory (segments, torch.cuda.max_memory_reserved) is larger still.
"""
from __future__ import annotations

MIN_BLOCK = 512                  # kMinBlockSize
SMALL_SIZE = 1 << 20             # kSmallSize: largest "small" request, and the least remainder that is split off
MIN_LARGE_ALLOC = 10 << 20       # kMinLargeAlloc
ROUND_LARGE = 2 << 20            # kRoundLarge


def block_bytes(nbytes: int) -> int:
    """Bytes booked as allocated for a request of `nbytes`."""
    if nbytes <= 0:
        return 0
    rounded = -(-nbytes // MIN_BLOCK) * MIN_BLOCK
    if rounded <= MIN_LARGE_ALLOC:
        return rounded
    segment = -(-rounded // ROUND_LARGE) * ROUND_LARGE
    return segment if segment - rounded <= SMALL_SIZE else rounded

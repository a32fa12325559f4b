"""The shared-memory cliff experiment's design: one trivial kernel, one block of THREADS threads
per SM, launched with exactly the default cap of dynamic shared memory, with one byte more, and
with little through cuLaunchKernelEx (RANGE_EX). helpers.smem_cliff.sources runs it,
helpers.smem_cliff.occupancy reads its trace."""
from __future__ import annotations

THREADS = 128
SMEM_AT_CAP = 48 * 1024          # the default per-block cap: Kineto's calculator accepts it
SMEM_OVER_CAP = 48 * 1024 + 1    # one byte more: runs (opted in), Kineto says it cannot
SMEM_SMALL = 1024
RANGE_EX = "cuLaunchKernelEx, small smem"

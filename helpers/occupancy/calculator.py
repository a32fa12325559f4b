"""Theoretical occupancy, worked out the way CUDA's own occupancy calculator works it out.

``occupancy()`` follows ``cudaOccMaxActiveBlocksPerMultiprocessor`` from ``cuda_occupancy.h``
(CUDA 13.0): the number of blocks one SM can hold is the smallest of four limits,

* warps: the SM's warp slots divided by the block's warps (threads rounded up to whole warps);
* registers: registers go to warps in units of 256 and each warp's registers come from one of
  the SM's four sub-partitions, so the count of warps that fit is worked out per sub-partition
  (64K / 4 registers each) and then multiplied by four; a block too large for the per-block
  register limit (checked with its warps rounded up to a multiple of four, as the hardware
  checks it) fits zero times;
* shared memory: each block takes its static + dynamic bytes plus 1 KiB the driver reserves
  (Ampere on), rounded up to the allocation unit; the SM's shared memory (its carveout) is, in
  this order: the size the driver configured for the launch where it is known
  (``shared_memory_config``, Nsight Compute's ``launch__shared_mem_config_size``); the carveout
  the kernel prefers, rounded up to a size the SM supports, or, when that is too small for one
  block, the smallest supported size that holds one; with no preference, the driver's own pick,
  modelled as the smallest supported size that holds the blocks the other three limits allow
  (see ``driver_shared_memory``); a block above the per-block cap fits zero times;
* blocks: the SM's block slots.

``kineto_estimated_occupancy_pct()`` reproduces the ``est. achieved occupancy %`` that Kineto
writes on every kernel event of a PyTorch profiler trace.

With no preference CUDA's header assumes the largest size, but the driver configures less: on
the recorded H200 and H100 kernels it never configured less than the modelled size and sometimes
more (FlashAttention-2's forward got the next size up from the one that holds its two blocks).
Any size from the modelled one up holds the blocks the other limits allow, so the number of
active blocks is the same for all of them; only whether shared memory ties as a limiter can
change, and where ncu recorded the size, passing it settles that.

The calculator leaves out two limits of the header that never lower the count for the
kernels met here: block barriers (Hopper on; a kernel with one barrier gets at least as many as
it has block slots) and Blackwell's "virtual resources" (zero unless a kernel declares some).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np

from .gpus import GPUSpec, gpu_spec

# the header reports a limit that does not apply (no registers, no shared memory) as INT_MAX
UNLIMITED = 2**31 - 1
LIMITERS = ("warps", "registers", "shared_memory", "blocks")
SHARED_MEMORY_LIMITS = ("default", "opt-in")

# What occupancy() says about input it refuses, as str.format templates. The browser calculator
# (calculator.js) is handed these same templates, so a field shows the words this module raises.
MESSAGES = {
    "not_integer": "{what} must be an integer, got {value!r}",
    "threads": "threads_per_block must be between 1 and the max threads per block ({limit}), "
               "got {value}",
    "registers": "registers_per_thread must be between 0 and the max registers per thread "
                 "({limit}), got {value}",
    "shared_memory_negative": "shared_memory_per_block must not be negative, got {value}",
    "shared_memory_optin": "shared_memory_per_block {value} B is above the opt-in shared memory "
                           "per block maximum of {gpu} ({limit} B)",
    "carveout": "carveout must be None (no preference) or a percentage 0..100, got {value}",
    "shared_memory_limit": "shared_memory_limit must be one of {limits}, got {value!r}",
    "shared_memory_config": "shared_memory_config must be None or a per-SM shared memory size "
                            "{gpu} supports ({sizes}), got {value}",
}


@dataclass(frozen=True)
class Occupancy:
    """What fits on one SM for one launch configuration."""

    gpu: GPUSpec
    threads_per_block: int
    registers_per_thread: int
    shared_memory_per_block: int
    carveout: int | None
    shared_memory_limit: str
    # where the SM's shared memory came from: "configured" (handed, e.g. from ncu), "preference"
    # (the kernel's carveout) or "driver" (no preference: the modelled driver's pick)
    shared_memory_source: str
    active_blocks: int
    active_warps: int
    max_warps: int
    occupancy: float
    limiters: frozenset[str]
    block_limits: dict[str, int] = field(hash=False)
    warps_per_block: int
    registers_per_block: int
    shared_memory_allocated_per_block: int
    # the shared memory the SM is set up with for this kernel (see shared_memory_source)
    shared_memory_per_sm: int
    utilization: dict[str, float] = field(hash=False)

    @property
    def occupancy_pct(self) -> float:
        return 100.0 * self.occupancy


def _as_int(value, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(MESSAGES["not_integer"].format(what=what, value=value))
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(MESSAGES["not_integer"].format(what=what, value=value)) from None


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def _smallest_carveout_holding(spec: GPUSpec, size: int) -> int | None:
    """The smallest per-SM shared memory size the SM supports that holds ``size`` bytes."""
    for option in spec.shared_memory_carveouts:
        if option >= size:
            return option
    return None


def _preferred_shared_memory(spec: GPUSpec, carveout: int | None) -> int:
    # a percentage is of the largest size, in integer arithmetic as the header does it, then
    # rounded up to a supported size (None here: the largest, as the header takes no preference)
    if carveout is None:
        wanted = spec.shared_memory_per_sm
    else:
        wanted = carveout * spec.shared_memory_per_sm // 100
    chosen = _smallest_carveout_holding(spec, wanted)
    assert chosen is not None  # wanted never exceeds the largest size
    return chosen


def driver_shared_memory(spec: GPUSpec, smem_allocated: int, other_blocks: int) -> int:
    """The per-SM shared memory the driver configures for a kernel with no carveout preference,
    modelled: the smallest size the SM supports that holds the blocks the other three limits
    allow (at least one, at most as many as the largest size holds). The driver documents no
    rule; on every kernel recorded under ncu it configured this size or a larger one."""
    if smem_allocated <= 0:
        return spec.shared_memory_carveouts[0]
    target = max(1, min(other_blocks, spec.shared_memory_per_sm // smem_allocated))
    chosen = _smallest_carveout_holding(spec, target * smem_allocated)
    return spec.shared_memory_per_sm if chosen is None else chosen


def _check(spec, threads, registers, smem, carveout, shared_memory_limit, config=None):
    if not 1 <= threads <= spec.max_threads_per_block:
        raise ValueError(MESSAGES["threads"].format(limit=spec.max_threads_per_block, value=threads))
    if not 0 <= registers <= spec.max_registers_per_thread:
        raise ValueError(MESSAGES["registers"].format(limit=spec.max_registers_per_thread,
                                                      value=registers))
    if smem < 0:
        raise ValueError(MESSAGES["shared_memory_negative"].format(value=smem))
    if smem > spec.shared_memory_per_block_optin:
        raise ValueError(MESSAGES["shared_memory_optin"].format(
            value=smem, gpu=spec.name, limit=spec.shared_memory_per_block_optin))
    if carveout is not None and not 0 <= carveout <= 100:
        raise ValueError(MESSAGES["carveout"].format(value=carveout))
    if shared_memory_limit not in SHARED_MEMORY_LIMITS:
        raise ValueError(MESSAGES["shared_memory_limit"].format(limits=SHARED_MEMORY_LIMITS,
                                                                value=shared_memory_limit))
    if config is not None and config not in spec.shared_memory_carveouts:
        raise ValueError(MESSAGES["shared_memory_config"].format(
            gpu=spec.name, sizes=", ".join(map(str, spec.shared_memory_carveouts)), value=config))


def occupancy(gpu, threads_per_block: int, registers_per_thread: int,
              shared_memory_per_block: int = 0, *, carveout: int | None = None,
              shared_memory_limit: str = "opt-in",
              shared_memory_config: int | None = None) -> Occupancy:
    """Theoretical occupancy of one SM, as cudaOccMaxActiveBlocksPerMultiprocessor gives it,
    with the shared memory the driver configures for the launch.

    ``gpu`` is a compute capability ("9.0", "sm_90", (9, 0)) or a product ("H200").
    ``shared_memory_per_block`` is static + dynamic bytes. ``carveout`` is the kernel's
    preferred shared-memory carveout in percent (None: no preference). With
    ``shared_memory_limit="opt-in"`` the kernel is taken to have raised its dynamic shared
    memory limit to the GPU's opt-in maximum; with ``"default"`` it has not, so a block above
    48 KiB fits zero times (as Kineto computes it). ``shared_memory_config``: the per-SM shared
    memory the driver configured for the launch, where known (ncu's
    ``launch__shared_mem_config_size``); it overrides the carveout. Raises ValueError for
    impossible input.
    """
    spec = gpu_spec(gpu)
    threads = _as_int(threads_per_block, "threads_per_block")
    registers = _as_int(registers_per_thread, "registers_per_thread")
    smem = _as_int(shared_memory_per_block, "shared_memory_per_block")
    if carveout is not None:
        carveout = _as_int(carveout, "carveout")
    config = None if shared_memory_config is None else _as_int(shared_memory_config,
                                                                 "shared_memory_config")
    _check(spec, threads, registers, smem, carveout, shared_memory_limit, config)

    warps_per_block = -(-threads // spec.warp_size)

    # warps
    warp_limit = spec.max_warps_per_sm // warps_per_block

    # registers: per warp, rounded to the allocation unit; counted per sub-partition
    regs_per_warp = _round_up(registers * spec.warp_size, spec.register_allocation_unit)
    regs_per_block = regs_per_warp * warps_per_block
    # the hardware's per-block check acts as if the block's warps were spread over all the
    # sub-partitions at once, so it rounds the warps up to a multiple of their number
    regs_checked = regs_per_warp * _round_up(warps_per_block, spec.sm_subpartitions)
    if regs_checked > spec.max_registers_per_block or regs_per_block > spec.max_registers_per_block:
        register_limit = 0
    elif regs_per_warp == 0:
        register_limit = UNLIMITED
    else:
        warps_per_subpartition = (spec.registers_per_sm // spec.sm_subpartitions) // regs_per_warp
        register_limit = warps_per_subpartition * spec.sm_subpartitions // warps_per_block

    # shared memory
    smem_allocated = _round_up(smem + spec.reserved_shared_memory_per_block,
                               spec.shared_memory_allocation_unit)
    per_block_cap = (spec.shared_memory_per_block_optin if shared_memory_limit == "opt-in"
                     else spec.shared_memory_per_block_default)
    # the driver's reserve is added to the cap too, so the cap applies to what the kernel asks for
    per_block_cap += spec.reserved_shared_memory_per_block
    other_blocks = min(warp_limit, register_limit, spec.max_blocks_per_sm)
    if config is not None:
        source, smem_per_sm = "configured", config
    elif carveout is not None:
        # a preference too small for even one block gives way to the smallest size that fits one
        source, smem_per_sm = "preference", _preferred_shared_memory(spec, carveout)
        if smem_per_sm < smem_allocated <= per_block_cap:
            smem_per_sm = _smallest_carveout_holding(spec, smem_allocated)
    else:
        # a block that cannot launch leaves the SM as the header sees it: the largest size
        source = "driver"
        smem_per_sm = (spec.shared_memory_per_sm if smem_allocated > per_block_cap
                       else driver_shared_memory(spec, smem_allocated, other_blocks))
    if smem_allocated > per_block_cap:
        smem_limit = 0
    else:
        smem_limit = smem_per_sm // smem_allocated if smem_allocated > 0 else UNLIMITED

    block_limits = {"warps": warp_limit, "registers": register_limit,
                    "shared_memory": smem_limit, "blocks": spec.max_blocks_per_sm}
    active_blocks = min(block_limits.values())
    limiters = frozenset(k for k, v in block_limits.items() if v == active_blocks)
    active_warps = active_blocks * warps_per_block
    max_warps = spec.max_warps_per_sm

    utilization = {
        "warps": active_warps / max_warps,
        "registers": active_blocks * regs_per_block / spec.registers_per_sm,
        "shared_memory": (active_blocks * smem_allocated / smem_per_sm) if smem_per_sm else 0.0,
        "blocks": active_blocks / spec.max_blocks_per_sm,
    }
    return Occupancy(
        gpu=spec, threads_per_block=threads, registers_per_thread=registers,
        shared_memory_per_block=smem, carveout=carveout,
        shared_memory_limit=shared_memory_limit, shared_memory_source=source,
        active_blocks=active_blocks,
        active_warps=active_warps, max_warps=max_warps, occupancy=active_warps / max_warps,
        limiters=limiters, block_limits=block_limits, warps_per_block=warps_per_block,
        registers_per_block=regs_per_block, shared_memory_allocated_per_block=smem_allocated,
        shared_memory_per_sm=smem_per_sm, utilization=utilization)


def kineto_estimated_occupancy_pct(gpu, threads_per_block: int, registers_per_thread: int,
                                   shared_memory_per_block: int, grid_blocks: int,
                                   sm_count: int) -> int:
    """The ``est. achieved occupancy %`` Kineto writes on a kernel event, recomputed.

    Mirrors pytorch/kineto libkineto/src/DeviceProperties.cpp (``blocksPerSm``,
    ``kernelOccupancy``) and the kernel event's metadata in libkineto/src/CuptiActivity.cpp:

    * blocks per SM = grid blocks / SM count, in float;
    * active blocks from cudaOccMaxActiveBlocksPerMultiprocessor with
      ``FUNC_SHMEM_LIMIT_DEFAULT`` (no opt-in), the kernel's static + dynamic shared memory and
      the default carveout;
    * occupancy = min(active blocks, blocks per SM) * threads per block / max threads per SM,
      all in float;
    * written as ``(int)(0.5 + occupancy * 100.0)``, i.e. rounded half up.

    A grid smaller than the SM count therefore reads as a small fraction of one block per SM
    (one block on 132 SMs is 0.05%, written 0), and a block above 48 KiB of shared memory
    reads 0 because Kineto leaves out the opt-in.
    """
    grid = _as_int(grid_blocks, "grid_blocks")
    sms = _as_int(sm_count, "sm_count")
    if grid < 0:
        raise ValueError(f"grid_blocks must not be negative, got {grid}")
    if sms <= 0:
        raise ValueError(f"sm_count must be positive, got {sms}")
    result = occupancy(gpu, threads_per_block, registers_per_thread, shared_memory_per_block,
                       carveout=None, shared_memory_limit="default")
    f32 = np.float32
    # C: (gridX * gridY * gridZ) / (float) smCount, then the min with an int, all in float
    blocks_per_sm = f32(grid) / f32(sms)
    if f32(result.active_blocks) < blocks_per_sm:
        blocks_per_sm = f32(result.active_blocks)
    occ = blocks_per_sm * f32(result.threads_per_block) / f32(result.gpu.max_threads_per_sm)
    # C: (int) (0.5 + occupancy * 100.0), the product in double, truncated toward zero
    return int(0.5 + float(occ) * 100.0)

"""Facts about NVIDIA GPUs that the occupancy arithmetic needs, kept as data.

Two tables:

* ``ARCHITECTURES``: one ``GPUSpec`` for each compute capability. These are what decide how
  many blocks fit on one SM: warp slots, block slots, the register file and how it is handed
  out, and shared memory and how it is handed out. The figures come from the CUDA programming
  guide's table of technical specifications per compute capability, plus the allocation rules
  that CUDA's occupancy calculator (``cuda_occupancy.h``, CUDA 13.0) applies: allocation
  granularities, sub-partitions, and the per-SM shared-memory sizes a carveout can pick.
* ``PRODUCTS``: cards, each with its compute capability and its number of SMs. Two cards with
  the same capability (an L4 and an L40S) have the same per-SM limits but different SM counts.
  The SM count only matters for per-grid figures such as Kineto's "blocks per SM".

Nothing here imports torch: the tables work on a machine with no GPU, and that is where traces
are read.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

KiB = 1024


@dataclass(frozen=True)
class GPUSpec:
    """The per-SM limits of one compute capability (and, when known, one product)."""

    capability: tuple[int, int]
    architecture: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    # largest shared memory one SM can have (its largest carveout), bytes
    shared_memory_per_sm: int
    # the most one block can ask for after opting in (cudaFuncAttributeMaxDynamicSharedMemorySize)
    shared_memory_per_block_optin: int
    # what the driver keeps for itself in every resident block (0 before Ampere)
    reserved_shared_memory_per_block: int
    # shared memory is handed to a block in pieces of this many bytes
    shared_memory_allocation_unit: int
    # the per-SM shared memory sizes the L1/shared split can be set to, in KiB, ascending
    shared_memory_carveouts_kib: tuple[int, ...]
    max_threads_per_block: int = 1024
    warp_size: int = 32
    registers_per_sm: int = 64 * KiB
    max_registers_per_block: int = 64 * KiB
    # the most a kernel can be compiled to use; the ISA's register numbers stop at R254
    max_registers_per_thread: int = 255
    # registers go to warps, never to single threads, in pieces of this many
    register_allocation_unit: int = 256
    register_allocation_granularity: str = "warp"
    # the register file is split between the SM's four schedulers; a warp's registers all
    # come from the one sub-partition it runs on
    sm_subpartitions: int = 4
    # without opting in, a block may use at most this much shared memory (static + dynamic)
    shared_memory_per_block_default: int = 48 * KiB
    # filled in for a product, None for a bare compute capability
    product: str | None = None
    sm_count: int | None = None

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * self.warp_size

    @property
    def sm(self) -> str:
        """The capability as the compiler spells it, e.g. 'sm_90'."""
        return f"sm_{self.capability[0]}{self.capability[1]}"

    @property
    def capability_str(self) -> str:
        return f"{self.capability[0]}.{self.capability[1]}"

    @property
    def shared_memory_carveouts(self) -> tuple[int, ...]:
        """The supported per-SM shared memory sizes, in bytes, ascending."""
        return tuple(k * KiB for k in self.shared_memory_carveouts_kib)

    @property
    def name(self) -> str:
        return self.product or self.sm


# The L1/shared split each generation offers. Turing has only two sizes (no 0); the data-centre
# Ampere (8.0) and Orin (8.7) parts go to 164 KiB; Hopper and the data-centre Blackwell parts
# to 228 KiB; the smaller Ampere, Ada and consumer Blackwell parts to 100 KiB.
_CARVEOUTS_TURING = (32, 64)
_CARVEOUTS_100 = (0, 8, 16, 32, 64, 100)
_CARVEOUTS_164 = (0, 8, 16, 32, 64, 100, 132, 164)
_CARVEOUTS_228 = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)


def _arch(capability, architecture, warps, blocks, smem_kib, carveouts) -> GPUSpec:
    major = capability[0]
    # Ampere onwards: 1 KiB of every block's shared memory belongs to the driver, and the
    # opt-in maximum is what is left of the largest carveout after it. Turing keeps nothing back.
    reserved = 1 * KiB if major >= 8 else 0
    return GPUSpec(
        capability=capability,
        architecture=architecture,
        max_warps_per_sm=warps,
        max_blocks_per_sm=blocks,
        shared_memory_per_sm=smem_kib * KiB,
        shared_memory_per_block_optin=smem_kib * KiB - reserved,
        reserved_shared_memory_per_block=reserved,
        shared_memory_allocation_unit=128 if major >= 8 else 256,
        shared_memory_carveouts_kib=carveouts,
    )


ARCHITECTURES: dict[tuple[int, int], GPUSpec] = {
    spec.capability: spec
    for spec in (
        _arch((7, 5), "Turing", 32, 16, 64, _CARVEOUTS_TURING),
        _arch((8, 0), "Ampere", 64, 32, 164, _CARVEOUTS_164),
        _arch((8, 6), "Ampere", 48, 16, 100, _CARVEOUTS_100),
        _arch((8, 7), "Ampere (Orin)", 48, 16, 164, _CARVEOUTS_164),
        _arch((8, 9), "Ada Lovelace", 48, 24, 100, _CARVEOUTS_100),
        _arch((9, 0), "Hopper", 64, 32, 228, _CARVEOUTS_228),
        _arch((10, 0), "Blackwell", 64, 32, 228, _CARVEOUTS_228),
        _arch((10, 3), "Blackwell Ultra", 64, 32, 228, _CARVEOUTS_228),
        # Thor; numbered 10.1 before CUDA 13
        _arch((11, 0), "Blackwell (Thor)", 48, 24, 228, _CARVEOUTS_228),
        _arch((12, 0), "Blackwell (consumer)", 48, 24, 100, _CARVEOUTS_100),
        _arch((12, 1), "Blackwell (GB10)", 48, 24, 100, _CARVEOUTS_100),
    )
}


@dataclass(frozen=True)
class Product:
    """One card: its compute capability and SM count, and the names drivers give it."""

    name: str
    capability: tuple[int, int]
    sm_count: int
    # regular expressions, matched against a lower-cased device name with the vendor words
    # ("nvidia", "tesla", "geforce") removed
    patterns: tuple[str, ...]
    note: str = ""

    @property
    def spec(self) -> GPUSpec:
        return dataclasses.replace(ARCHITECTURES[self.capability], product=self.name,
                                   sm_count=self.sm_count)


PRODUCTS: dict[str, Product] = {
    p.name: p
    for p in (
        Product("T4", (7, 5), 40, (r"^t4$",), "Tesla T4"),
        # A10G (AWS g5) has 80 SMs; the plain A10 has 72, so it is not matched here
        Product("A10G", (8, 6), 80, (r"^a10g$",)),
        Product("L4", (8, 9), 58, (r"^l4$",)),
        Product("L40S", (8, 9), 142, (r"^l40s$",)),
        # every A100 (SXM4 and PCIe, 40 and 80 GB) has 108 SMs enabled
        Product("A100", (8, 0), 108, (r"^a100\b",)),
        # H100 SXM5; the PCIe card has 114 SMs and the NVL another configuration, so both are
        # left unmatched rather than given a wrong count
        Product("H100", (9, 0), 132, (r"^h100$", r"^h100 sxm", r"^h100 80gb hbm3$"), "SXM5"),
        Product("H200", (9, 0), 132, (r"^h200$", r"^h200 sxm", r"^h200 141gb"), "SXM"),
        Product("B200", (10, 0), 148, (r"^b200$",)),
        Product("RTX 5090", (12, 0), 170, (r"^rtx 5090( d)?$",), "GeForce RTX 5090"),
    )
}


# How a driver's device name is read, as regular expressions (the browser calculator gets these
# same patterns): vendor words dropped; variants whose SM count differs from the table's refused,
# except for the products every variant of which has the table's SM count
VENDOR_WORDS = r"\b(nvidia|tesla|geforce)\b"
EXCLUDED_VARIANTS = r"\b(pcie|nvl|laptop|mobile|max q)\b"
ALL_VARIANTS_SHARE_SM_COUNT = ("A100",)   # A100 PCIe keeps all 108 SMs
# a compute capability as text, matched whole: "9.0"; sm_90, sm90, sm_90a, compute_90, sm_100f
# (the last digit is the minor version)
CAPABILITY_PATTERNS = (r"(\d+)\.(\d)", r"(?:sm|compute)_?(\d+?)(\d)[af]?")


def _normalize(name: str) -> str:
    name = name.lower().replace("_", " ").replace("-", " ")
    name = re.sub(VENDOR_WORDS, " ", name)
    return re.sub(r"\s+", " ", name).strip()


_EXCLUDED = re.compile(EXCLUDED_VARIANTS)


def product_for_device_name(device_name: str) -> Product | None:
    """The product a driver's device name (torch.cuda.get_device_name) refers to, or None.

    "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "Tesla T4", "NVIDIA L40S" and
    "NVIDIA GeForce RTX 5090" are recognised. Names of cards whose SM count differs from the
    table's (H100 PCIe, laptop parts) give None rather than a wrong count.
    """
    if not isinstance(device_name, str):
        return None
    norm = _normalize(device_name)
    for product in PRODUCTS.values():
        if any(re.search(p, norm) for p in product.patterns):
            if product.name not in ALL_VARIANTS_SHARE_SM_COUNT and _EXCLUDED.search(norm):
                return None
            return product
    return None


def _parse_capability(value) -> tuple[int, int] | None:
    if isinstance(value, tuple) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    for pattern in CAPABILITY_PATTERNS:
        match = re.fullmatch(pattern, text)
        if match:
            return int(match.group(1)), int(match.group(2))
    return None


# what gpu_spec() says about a GPU it does not know, as str.format templates (calculator.js gets
# these same templates)
MESSAGES = {
    "unknown_capability": "unknown GPU: compute capability {major}.{minor} is not in the table; "
                          "known: {known}",
    "unknown_gpu": "unknown GPU {value!r}; known: {known}",
}


def known_gpus() -> str:
    """The capabilities and products the tables know, for error messages."""
    caps = ", ".join(f"{a}.{b}" for a, b in ARCHITECTURES)
    return f"compute capabilities {caps}; products {', '.join(PRODUCTS)}"


def gpu_spec(name_or_capability: str | tuple[int, int] | GPUSpec | Product) -> GPUSpec:
    """The ``GPUSpec`` for a compute capability or a product.

    Accepts "9.0", "sm_90", (9, 0), a product key ("H200") or a driver's device name
    ("NVIDIA H200", "NVIDIA A100-SXM4-80GB"). A product's spec carries its SM count.
    Raises ValueError naming the known GPUs for anything else.
    """
    if isinstance(name_or_capability, GPUSpec):
        return name_or_capability
    if isinstance(name_or_capability, Product):
        return name_or_capability.spec
    capability = _parse_capability(name_or_capability)
    if capability is not None:
        if capability in ARCHITECTURES:
            return ARCHITECTURES[capability]
        raise ValueError(MESSAGES["unknown_capability"].format(
            major=capability[0], minor=capability[1], known=known_gpus()))
    if isinstance(name_or_capability, str):
        for key, product in PRODUCTS.items():
            if name_or_capability.strip().lower() == key.lower():
                return product.spec
        product = product_for_device_name(name_or_capability)
        if product is not None:
            return product.spec
    raise ValueError(MESSAGES["unknown_gpu"].format(value=name_or_capability, known=known_gpus()))

"""The occupancy calculator and what is built on it.

calculator (CUDA's occupancy rules, and Kineto's estimate) and gpus (the per-architecture limits
and the products) are the calculator itself, and import nothing else of helpers; charts, drawing
(the SM drawing), browser (the calculator page, which calculates in the reader's browser with
js/occupancy.js, a port of calculator.py handed every table by Python), lessons (the occupancy
chapter) build on it and on the two layers below; so does the shared-memory experiment's reading
(helpers/smem_cliff/occupancy.py, layer occupancy in its feature slice).

    from helpers.occupancy import occupancy
    occupancy("H200", 384, 168, 134144)   # -> Occupancy(active_blocks=1, ...)
"""
from .calculator import (LIMITERS, SHARED_MEMORY_LIMITS, UNLIMITED, Occupancy,
                         kineto_estimated_occupancy_pct, occupancy)
from .gpus import PRODUCTS, GPUSpec, gpu_spec, known_gpus, product_for_device_name

__all__ = ["LIMITERS", "PRODUCTS", "SHARED_MEMORY_LIMITS", "UNLIMITED", "GPUSpec", "Occupancy", "gpu_spec",
           "kineto_estimated_occupancy_pct", "known_gpus", "occupancy", "product_for_device_name"]

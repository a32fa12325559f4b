"""The stages the training chapter trains, and the backward's work counted from the shape.

Every stage with a backward, but hub_flash (the Hub cannot be reached from the machine that
records the replay set) and flex_sliding (flex with another mask)."""
from __future__ import annotations

from ..core.stages import Shape, stages_where

# queries of the stage registry (each Stage's has_training and fused facts)
TRAINING_STAGES = stages_where(has_training=True)
FUSED = stages_where(has_training=True, fused=True)  # keep no S×S matrix
BACKWARD_ANNOTATION = "attn_bwd"


def _product_flops(shape: Shape) -> float:
    """One [S, D]·[D, S] (or [S, S]·[S, D]) product per head: 2·B·H·S²·D, halved for a causal mask."""
    flops = 2 * shape.batch * shape.heads * shape.seq**2 * shape.head_dim
    return flops / 2 if shape.causal else flops


def backward_flops(shape: Shape) -> float:
    """The backward's matmul FLOPs where the scores are recomputed (the fused kernels): QKᵀ again,
    then dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q; 5 products against the forward's 2."""
    return 5 * _product_flops(shape)


def recompute_free_backward_flops(shape: Shape) -> float:
    """The same where P was kept (naive, math): the four gradient products, 2× the forward."""
    return 4 * _product_flops(shape)

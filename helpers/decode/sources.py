"""Decode's workloads, live: one attention call at decode (one new query per sequence against a
KV cache) per backend, and a decode step of several small layers run eagerly, as one CUDA graph
replay and under torch.compile(mode="reduce-overhead").

Used on a GPU by `tools/record_decode.py` (which records them into a replay set's decode/ folder)
and by Nsight Compute's profiled process (`ncu_child`); nothing here runs on import."""
from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Callable

import torch

from ..core.stages import STAGES, get_stage, stages_where

HEADS, HEAD_DIM = 32, 128          # the book's layer at decode: 32 query heads of 128
DTYPE = torch.bfloat16
# the stages the registry marks `decodes` (SDPA pinned to each backend, SDPA left to choose,
# FlexAttention, the naive code), and flex with a block mask built once outside the call
FLEX_BLOCKMASK = "flex_blockmask"
BACKENDS = stages_where(decodes=True) + (FLEX_BLOCKMASK,)


def kv_cache(batch: int, kv_len: int, heads: int = HEADS, device: str = "cuda", seed: int = 0) -> dict:
    """One layer's query at decode (batch, heads, 1, 128) and a filled KV cache (batch, heads, kv_len, 128)."""
    g = torch.Generator(device=device).manual_seed(seed)
    shape = (batch, heads, kv_len, HEAD_DIM)
    return {"q": torch.randn((batch, heads, 1, HEAD_DIM), generator=g, device=device, dtype=DTYPE),
            "k": torch.randn(shape, generator=g, device=device, dtype=DTYPE),
            "v": torch.randn(shape, generator=g, device=device, dtype=DTYPE)}


def backend_context(backend: str):
    """The context a backend's calls run in: SDPA pinned to the stage's backend, or nothing."""
    pinned = STAGES[backend].sdpa_backend if backend in STAGES else None
    if pinned:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel(getattr(SDPBackend, pinned))
    return nullcontext()


def is_sdpa(backend: str) -> bool:
    """An SDPA call: pinned to a backend, or left to choose (the registry's facts)."""
    return backend in STAGES and (get_stage(backend).sdpa_backend is not None or get_stage(backend).dispatched)


_FLEX: dict[str, Callable] = {}


def compiled_flex() -> Callable:
    """torch.compile(flex_attention), compiled once per process (each new shape recompiles)."""
    if "flex" not in _FLEX:
        import torch._dynamo
        from torch.nn.attention.flex_attention import flex_attention
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        if hasattr(torch._dynamo.config, "recompile_limit"):
            torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
        _FLEX["flex"] = torch.compile(flex_attention)
    return _FLEX["flex"]


def attention_call(backend: str, x: dict, is_causal: bool = False) -> Callable[[], torch.Tensor]:
    """One attention call at decode as a reader writes it (the correct call: is_causal=False, the
    one query sees every cached key). Run it inside `backend_context(backend)`."""
    q, k, v = x["q"], x["k"], x["v"]
    if is_sdpa(backend):
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return lambda: sdpa(q, k, v, is_causal=is_causal)
    if backend == "flex":   # no block mask: flex_attention builds an empty one inside the call
        flex = compiled_flex()
        return lambda: flex(q, k, v)
    if backend == FLEX_BLOCKMASK:   # a block mask built once, outside the call, as the book's flex stage does
        from torch.nn.attention.flex_attention import create_block_mask
        flex = compiled_flex()
        keep = lambda b, h, q_idx, kv_idx: kv_idx >= 0  # noqa: E731 - every cached key
        mask = create_block_mask(keep, None, None, q.shape[-2], k.shape[-2], device=str(q.device))
        return lambda: flex(q, k, v, block_mask=mask)
    if backend == "naive":
        scale = 1 / math.sqrt(q.shape[-1])
        return lambda: torch.softmax((q @ k.transpose(-2, -1)) * scale, dim=-1) @ v
    raise KeyError(f"no decode backend {backend!r}; the backends are {', '.join(BACKENDS)}")


def reference(x: dict, is_causal: bool = False) -> torch.Tensor:
    """The math backend's answer in float32: what every backend's output is compared with."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        return torch.nn.functional.scaled_dot_product_attention(
            x["q"].float(), x["k"].float(), x["v"].float(), is_causal=is_causal)


# --- a decode step: several small layers, each launching its own kernels --------------------------

class DecodeLayer(torch.nn.Module):
    """One attention block at decode, as gpt-fast writes it: RMSNorm, a fused QKV projection,
    rotary embedding, the new key and value written into the cache at `pos`, SDPA over the whole
    cache (is_causal=False), the output projection and the residual. The cache length is held
    fixed: every step replays the same position, which is what a timing loop needs."""

    def __init__(self, dim: int, cache_len: int, batch: int = 1):
        super().__init__()
        self.heads, self.dim = dim // HEAD_DIM, dim
        self.wqkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.wo = torch.nn.Linear(dim, dim, bias=False)
        self.norm = torch.nn.Parameter(torch.ones(dim))
        self.register_buffer("k_cache", torch.randn(batch, self.heads, cache_len, HEAD_DIM) * 0.5)
        self.register_buffer("v_cache", torch.randn(batch, self.heads, cache_len, HEAD_DIM) * 0.5)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """One layer on one new token per sequence (`x`: [batch, 1, dim]); its key and value go to `pos`."""
        b = x.shape[0]
        h = x.float()
        h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * self.norm
        q, k, v = self.wqkv(h).split(self.dim, dim=-1)
        q, k, v = (t.view(b, 1, self.heads, HEAD_DIM).transpose(1, 2) for t in (q, k, v))
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        self.k_cache[:, :, pos] = k
        self.v_cache[:, :, pos] = v
        o = torch.nn.functional.scaled_dot_product_attention(q, self.k_cache, self.v_cache, is_causal=False)
        return x + self.wo(o.transpose(1, 2).reshape(b, 1, self.dim))


def rotary(t: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = t.shape[-1] // 2
    rotated = torch.cat((-t[..., half:], t[..., :half]), dim=-1)
    return t * cos + rotated * sin


class DecodeModel(torch.nn.Module):
    """`layers` DecodeLayers; forward(x, pos) is one decode step of one token per sequence."""

    def __init__(self, layers: int = 8, dim: int = HEADS * HEAD_DIM, cache_len: int = 1024, batch: int = 1):
        super().__init__()
        self.layers = torch.nn.ModuleList(DecodeLayer(dim, cache_len, batch) for _ in range(layers))
        inv = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        angles = torch.outer(torch.arange(cache_len).float(), inv).repeat(1, 2)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """One decode step: every layer in turn on the new token `x`, at cache position `pos`."""
        cos, sin = self.cos[pos].to(x.dtype), self.sin[pos].to(x.dtype)
        for layer in self.layers:
            x = layer(x, pos, cos, sin)
        return x


def decode_step(mode: str, layers: int = 8, cache_len: int = 1024, batch: int = 1,
                device: str = "cuda") -> tuple[Callable[[], torch.Tensor], dict]:
    """One decode step as `mode` runs it: "eager" (each kernel launched on its own), "graph"
    (the same step captured once into a torch.cuda.CUDAGraph, then `g.replay()`) or "compiled"
    (torch.compile(mode="reduce-overhead"), which captures CUDA graphs itself). Returns the
    step and what it is (layers, cache length, batch, weights' bytes)."""
    torch.manual_seed(0)
    model = DecodeModel(layers, cache_len=cache_len, batch=batch).to(device=device, dtype=DTYPE).eval()
    dim = model.layers[0].dim
    x = torch.randn(batch, 1, dim, device=device, dtype=DTYPE)
    pos = torch.tensor([cache_len - 1], device=device)
    facts = {"mode": mode, "layers": layers, "cache_len": cache_len, "batch": batch, "dim": dim,
             "heads": dim // HEAD_DIM, "head_dim": HEAD_DIM,
             "weight_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
             "cache_bytes": sum(b.numel() * b.element_size() for n, b in model.named_buffers() if "cache" in n)}
    torch.set_grad_enabled(False)
    if mode == "eager":
        return (lambda: model(x, pos)), facts
    if mode == "graph":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):   # warm-up outside the graph: cuBLAS workspaces, SDPA's choice
                model(x, pos)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            model(x, pos)
        facts["graph"] = "torch.cuda.CUDAGraph, g.replay()"
        return graph.replay, facts
    if mode == "compiled":
        compiled = torch.compile(model, mode="reduce-overhead")

        def step() -> torch.Tensor:
            torch.compiler.cudagraph_mark_step_begin()
            return compiled(x, pos)
        return step, facts
    raise KeyError(f"no decode step mode {mode!r}: eager, graph or compiled")

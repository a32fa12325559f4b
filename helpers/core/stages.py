"""The registry of attention stages: what each one runs, on which inputs, on which hardware."""
from __future__ import annotations

import contextlib
import importlib
import math
import time
from dataclasses import dataclass, field
from typing import Callable

from .errors import StageUnavailable
from .palette import KIND_COLORS

# the input dtypes, by torch's name; torch itself is imported where a forward runs, so that
# replay (and `import helpers`) never pays for importing it
DTYPES = {"bfloat16": 2, "float16": 2, "float32": 4}   # name -> bytes per element


@dataclass(frozen=True)
class Shape:
    """The inputs of one attention forward: q, k and v of [batch, heads, seq, head_dim]."""

    batch: int = 8
    heads: int = 16
    seq: int = 1024
    head_dim: int = 64
    dtype: str = "bfloat16"
    causal: bool = True

    def __post_init__(self) -> None:
        for name in ("batch", "heads", "seq", "head_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Shape.{name} must be a positive integer, got {value!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"Shape.dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}")

    @property
    def torch_dtype(self) -> "torch.dtype":
        import torch
        return getattr(torch, self.dtype)

    @property
    def element_size(self) -> int:
        """Bytes per element of q, k, v (and of the scores, in the same dtype)."""
        return DTYPES[self.dtype]

    @property
    def key(self) -> str:
        """A file-name-safe key, used to name recorded traces."""
        causal = "causal" if self.causal else "full"
        return f"b{self.batch}_h{self.heads}_s{self.seq}_d{self.head_dim}_{self.dtype}_{causal}"

    @classmethod
    def from_key(cls, key: str) -> "Shape":
        b, h, s, d, dtype, causal = key.split("_")
        return cls(int(b[1:]), int(h[1:]), int(s[1:]), int(d[1:]), dtype, causal == "causal")

    def as_dict(self) -> dict:
        return {"batch": self.batch, "heads": self.heads, "seq": self.seq,
                "head_dim": self.head_dim, "dtype": self.dtype, "causal": self.causal}

    @property
    def attention_flops(self) -> float:
        """FLOPs of the two matmuls, halved for a causal mask (4·B·H·S²·D / 2)."""
        flops = 4 * self.batch * self.heads * self.seq**2 * self.head_dim
        return flops / 2 if self.causal else flops


DEFAULT_SHAPE = Shape()


@dataclass(frozen=True)
class Requirement:
    """What hardware a stage needs. `check` returns None when it can run, else the reason."""

    summary: str
    min_capability: tuple[int, int] | None = None
    dtypes: tuple[str, ...] | None = None
    max_head_dim: int | None = None

    def problem(self, shape: Shape, device: torch.device) -> str | None:
        import torch
        if device.type != "cuda":
            return f"it needs a CUDA GPU ({self.summary}) and this process has none"
        if self.min_capability is not None:
            cap = torch.cuda.get_device_capability(device)
            if cap < self.min_capability:
                name = torch.cuda.get_device_name(device)
                need = ".".join(map(str, self.min_capability))
                return (f"{name} is compute capability {cap[0]}.{cap[1]}, and it needs {need} "
                        f"or newer ({self.summary})")
        if self.dtypes is not None and shape.dtype not in self.dtypes:
            return f"it runs only on {' or '.join(self.dtypes)} inputs, not {shape.dtype}"
        if self.max_head_dim is not None and shape.head_dim > self.max_head_dim:
            return f"it supports head_dim up to {self.max_head_dim}, not {shape.head_dim}"
        return None


ANY_CUDA = Requirement("any CUDA GPU")


@dataclass(frozen=True)
class Stage:
    """One way of computing causal attention, as one notebook teaches it."""

    name: str
    title: str
    what_changed: str
    forward: Callable[[dict], torch.Tensor] | None  # None: the hook module's forward()
    requirement: Requirement = ANY_CUDA
    sdpa_backend: str | None = None   # the SDPBackend member it pins, if any
    naive_mask: bool = False          # builds a [seq, seq] causal mask once, outside the forward
    guess_kinds: tuple[str, ...] = field(default_factory=tuple)  # one kernel per line of code
    extra_inputs: Callable[[dict], None] | None = None  # built once, outside the forward
    # a module that lives with a stage needing extra set-up (the Hub kernel, say), imported on
    # first use: its setup(inputs) runs once, outside the forward, and its forward(inputs) is the
    # forward. The registry names it and never imports it, so it may import anything below.
    hook: str | None = None
    compiled: bool = False            # torch.compile'd: the first call compiles (capture resets it)
    # what the pages say and draw about it, in one place
    short: str = ""                   # the key of its glued numbers (`flash_ratio`); default: name
    colour: str = KIND_COLORS["unknown"]   # its colour wherever stages are compared (roofline)
    symbol: str = "circle"            # its plotly marker, so that close points stay apart
    lesson: str = ""                  # in one line, what its chapter teaches (the closing table)
    # the start of the claim whose verdict, computed from the trace, backs the lesson there
    lesson_claim: str = ""
    # what is recorded of it and where it is compared: every stage list is a query of these
    # (`stages_where`), so a new stage is one register() call, its verdicts (one @verdict function,
    # helpers/views/verdicts.py) and its recordings (tools/record_all.py)
    swept: bool = True              # recorded at every sweep shape (tools/record.py --sweep)
    has_ncu: bool = True            # Nsight Compute's counters at the article's shape (record_ncu)
    ncu_swept: bool = False         # its counters at every sweep seq too (record_ncu; the roofline's sweep)
    has_training: bool = True       # a training step (chapter 11, tools/record_training.py)
    training_ncu: bool = False      # its backward under ncu (tools/record_training.py)
    fused: bool = False             # one kernel that keeps no S×S matrix (its backward recomputes it)
    variant_of: str | None = None   # another mask or binary of that stage: left out of the cross-stage pages
    repeats: str | None = None      # the stage whose kernels it runs again (less a copy): one line of the two in a sweep chart
    dispatched: bool = False        # no backend pinned: SDPA picks one at run time, so its kernels are a pinned stage's
    in_article: bool = False        # the source article profiled it (its closing table, chapter 8's shape explorer)
    snapshot: bool = False          # chapter 11 records its training step's memory snapshot (tools/record_training.py)
    decodes: bool = False           # recorded at decode, one query against a KV cache (tools/record_decode.py, 08b)

    def __post_init__(self) -> None:
        if not self.short:
            object.__setattr__(self, "short", self.name)

    def _hooked(self, name: str) -> Callable:
        return getattr(importlib.import_module(self.hook), name)

    def make_inputs(self, shape: Shape = DEFAULT_SHAPE, device: str | torch.device = "cuda",
                    seed: int = 0) -> dict:
        import torch
        device = torch.device(device)
        gen = torch.Generator(device=device).manual_seed(seed)
        size = (shape.batch, shape.heads, shape.seq, shape.head_dim)
        q, k, v = (torch.randn(size, device=device, dtype=shape.torch_dtype, generator=gen)
                   for _ in range(3))
        inputs = {"q": q, "k": k, "v": v, "shape": shape, "scale": 1 / math.sqrt(shape.head_dim)}
        if self.naive_mask:
            # True above the diagonal: the future positions a causal query must not see
            inputs["mask"] = torch.ones(shape.seq, shape.seq, device=device, dtype=torch.bool).triu(1)
        if self.extra_inputs is not None or self.hook is not None:
            # set-up outside the forward (a block mask, a kernel from the Hub): timed, since a
            # reader pays it once per shape and the trace never shows it
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            started = time.perf_counter()
            if self.extra_inputs is not None:
                self.extra_inputs(inputs)
            if self.hook is not None:
                self._hooked("setup")(inputs)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            inputs["setup_seconds"] = time.perf_counter() - started
        return inputs

    def check(self, shape: Shape, device: str | torch.device = "cuda") -> None:
        """Raise StageUnavailable, naming the cause and the way out, if the stage can't run."""
        import torch
        problem = self.requirement.problem(shape, torch.device(device))
        if problem:
            raise StageUnavailable(
                f"Stage {self.name!r} can't run here: {problem}. "
                f"Replay the recorded trace instead (mode='replay'), or pick another stage.")

    def run(self, inputs: dict, training: bool = False) -> torch.Tensor:
        """One forward, exactly as the profiler sees it: under no_grad, or with `training` under
        autograd, which records what the backward needs (helpers/training/sources_step.py)."""
        import torch
        # the backend is pinned outside attn_fwd, so its context manager is not counted as CPU time
        grad = torch.enable_grad() if training else torch.no_grad()
        with self._backend(), grad, torch.profiler.record_function("attn_fwd"):
            try:
                forward = self.forward if self.forward is not None else self._hooked("forward")
                return forward(inputs)
            except RuntimeError as err:
                if "No available kernel" in str(err):
                    shape = inputs["shape"]
                    raise StageUnavailable(
                        f"Stage {self.name!r}: SDPA has no {self.sdpa_backend} kernel for "
                        f"{shape.dtype} inputs of head_dim {shape.head_dim} on this GPU "
                        f"(torch says: No available kernel). Use bfloat16 or float16 inputs on an "
                        f"Ampere-or-newer GPU, or replay the recorded trace (mode='replay').") from err
                raise

    def _backend(self):
        if self.sdpa_backend is None:
            return contextlib.nullcontext()
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel(getattr(SDPBackend, self.sdpa_backend))


# --- the forwards -----------------------------------------------------------------------------

def naive_forward(x: dict) -> torch.Tensor:
    import torch
    scores = (x["q"] @ x["k"].transpose(-2, -1)) * x["scale"]
    scores = scores.masked_fill(x["mask"], float("-inf"))
    return torch.softmax(scores, dim=-1) @ x["v"]


def inplace_forward(x: dict) -> torch.Tensor:
    import torch
    scores = (x["q"] @ x["k"].transpose(-2, -1)) * x["scale"]
    scores.masked_fill_(x["mask"], float("-inf"))
    return torch.softmax(scores, dim=-1) @ x["v"]


def sdpa_forward(x: dict) -> torch.Tensor:
    import torch.nn.functional as F
    return F.scaled_dot_product_attention(x["q"], x["k"], x["v"], is_causal=x["shape"].causal)


AMPERE_HALF = dict(min_capability=(8, 0), dtypes=("bfloat16", "float16"))

STAGES: dict[str, Stage] = {}


def register(stage: Stage) -> Stage:
    STAGES[stage.name] = stage
    return stage


register(Stage(
    "naive", "Naive attention", "matmul, scale, out-of-place masked_fill, softmax, matmul",
    naive_forward, naive_mask=True,
    guess_kinds=("gemm", "elementwise", "masked_fill", "softmax", "gemm"),
    ncu_swept=True, training_ncu=True, in_article=True, snapshot=True, decodes=True,
    short="naive", colour=KIND_COLORS["masked_fill"], symbol="circle",
    lesson='an out-of-place masked_fill hides a full copy of the scores, a Memcpy no line of code asked for',
    lesson_claim='out-of-place masked_fill copies the scores first'))
register(Stage(
    "inplace", "In-place masking", "masked_fill_ writes into the scores instead of a copy",
    inplace_forward, naive_mask=True,
    guess_kinds=("gemm", "elementwise", "masked_fill", "softmax", "gemm"),
    training_ncu=True, in_article=True, repeats="naive",
    short="inplace", colour=KIND_COLORS["mask"], symbol="x-thin-open",
    lesson='masking in place saves one copy of the scores, not a kernel',
    lesson_claim='masked_fill_ writes in place'))
register(Stage(
    "sdpa_math", "SDPA, math backend", "F.scaled_dot_product_attention pinned to MATH",
    sdpa_forward, sdpa_backend="MATH",
    guess_kinds=("gemm", "elementwise", "masked_fill", "softmax", "gemm"),
    ncu_swept=True, training_ncu=True, in_article=True, decodes=True,
    short="math", colour=KIND_COLORS["softmax"], symbol="square",
    lesson=('one API call, yet more kernels than the naive code and other ones: fp32 copies and CUDA-core '
            'matmuls, a causal mask built on every call, a safe softmax'),
    lesson_claim='the math backend runs other kernels than the naive code'))
register(Stage(
    "sdpa_efficient", "SDPA, memory-efficient backend", "pinned to EFFICIENT_ATTENTION (xformers' CUTLASS kernel)",
    sdpa_forward, Requirement("the memory-efficient kernel needs sm 8.0+ for bf16", min_capability=(8, 0)),
    sdpa_backend="EFFICIENT_ATTENTION",
    guess_kinds=("attention",),
    ncu_swept=True, training_ncu=True, fused=True, in_article=True, decodes=True,
    short="efficient", colour=KIND_COLORS["elementwise"], symbol="triangle-up",
    lesson="one fused kernel, xformers' memory-efficient attention built on CUTLASS",
    lesson_claim='one fused CUTLASS'))
register(Stage(
    "sdpa_flash", "SDPA, flash backend", "pinned to FLASH_ATTENTION (FlashAttention-2, vendored in PyTorch)",
    sdpa_forward, Requirement("FlashAttention-2 needs an Ampere-or-newer GPU and fp16/bf16", **AMPERE_HALF,
                              max_head_dim=256),
    sdpa_backend="FLASH_ATTENTION",
    guess_kinds=("attention",),
    ncu_swept=True, training_ncu=True, fused=True, in_article=True, snapshot=True, decodes=True,
    short="flash", colour=KIND_COLORS["attention"], symbol="diamond",
    lesson='one fused FlashAttention-2 kernel: the scores never reach HBM',
    lesson_claim='one fused FlashAttention-2 kernel'))
register(Stage(
    "sdpa_cudnn", "SDPA, cuDNN backend", "pinned to CUDNN_ATTENTION (a kernel cuDNN generates)",
    sdpa_forward, Requirement("cuDNN attention needs an Ampere-or-newer GPU and fp16/bf16", **AMPERE_HALF),
    sdpa_backend="CUDNN_ATTENTION",
    guess_kinds=("attention",),
    ncu_swept=True, training_ncu=True, fused=True, in_article=True, decodes=True,
    short="cudnn", colour=KIND_COLORS["gemm"], symbol="star",
    lesson='a fused kernel cuDNN generates, and more CPU work around its launch',
    lesson_claim='cuDNN spends more CPU time per forward'))
register(Stage(
    "sdpa_auto", "SDPA, automatic choice", "no backend pinned: SDPA picks one for this GPU and shape",
    sdpa_forward,
    guess_kinds=("attention",),
    training_ncu=True, fused=True, dispatched=True, decodes=True,
    short="auto", colour=KIND_COLORS["reduce"], symbol="star-open",
    lesson='the backend SDPA picks by itself for this GPU and shape',
    lesson_claim="with no backend pinned, SDPA picks the fastest backend"))


# --- beyond the article: what a compiler makes of the same code ------------------------------
_compiled: dict[str, Callable] = {}


def _compiled_once(key: str, build: Callable[[], Callable]) -> Callable:
    # torch.compile is slow the first time; keep one compiled callable per process
    if key not in _compiled:
        _compiled[key] = build()
    return _compiled[key]


def reset_compiled() -> None:
    """Forget every compiled callable and dynamo's caches: the next call compiles afresh."""
    import torch
    _compiled.clear()
    torch._dynamo.reset()


def compiled_naive_forward(x: dict) -> torch.Tensor:
    import torch
    def core(q, k, v, mask, scale):
        scores = (q @ k.transpose(-2, -1)) * scale
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v
    fn = _compiled_once("naive", lambda: torch.compile(core))
    return fn(x["q"], x["k"], x["v"], x["mask"], x["scale"])


def flex_forward(x: dict) -> torch.Tensor:
    import torch
    from torch.nn.attention.flex_attention import flex_attention
    fn = _compiled_once("flex", lambda: torch.compile(flex_attention))
    return fn(x["q"], x["k"], x["v"], block_mask=x["block_mask"])


SLIDING_WINDOW = 256  # tokens: each query sees itself and the 255 keys before it


def add_sliding_window_block_mask(inputs: dict) -> None:
    from torch.nn.attention.flex_attention import create_block_mask
    seq, device = inputs["shape"].seq, inputs["q"].device
    window = lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & (q_idx - kv_idx < SLIDING_WINDOW)  # noqa: E731
    inputs["block_mask"] = create_block_mask(window, None, None, seq, seq, device=device)


def add_causal_block_mask(inputs: dict) -> None:
    from torch.nn.attention.flex_attention import create_block_mask
    seq, device = inputs["shape"].seq, inputs["q"].device
    causal = lambda b, h, q_idx, kv_idx: q_idx >= kv_idx  # noqa: E731
    inputs["block_mask"] = create_block_mask(causal, None, None, seq, seq, device=device)


TRITON = Requirement("Triton needs an sm 7.0+ GPU", min_capability=(7, 0))
register(Stage(
    "naive_compiled", "Naive attention, torch.compile", "the naive code through torch.compile",
    compiled_naive_forward, TRITON, naive_mask=True,
    guess_kinds=("gemm", "fused", "gemm"), compiled=True,
    short="compiled", colour=KIND_COLORS["fused"], symbol="pentagon",
    lesson='torch.compile fuses the scale, mask and softmax into one Triton kernel; the matmuls stay',
    lesson_claim='scale, mask and softmax fuse'))
register(Stage(
    "flex", "FlexAttention", "flex_attention with a causal block mask, compiled to one Triton kernel",
    flex_forward, Requirement("FlexAttention needs Triton on an sm 8.0+ GPU", min_capability=(8, 0)),
    guess_kinds=("attention",),
    ncu_swept=True, fused=True, decodes=True,
    extra_inputs=add_causal_block_mask, compiled=True,
    short="flex", colour=KIND_COLORS["copy"], symbol="hexagon",
    lesson='FlexAttention compiles a causal block mask into one Triton kernel',
    lesson_claim='one Triton template kernel does the whole forward'))
register(Stage(
    "flex_sliding", "FlexAttention, sliding window",
    f"the same flex_attention with a causal sliding-window mask of {SLIDING_WINDOW} tokens, which SDPA has no flag for",
    flex_forward, Requirement("FlexAttention needs Triton on an sm 8.0+ GPU", min_capability=(8, 0)),
    guess_kinds=("attention",),
    has_training=False, fused=True, variant_of="flex",
    extra_inputs=add_sliding_window_block_mask, compiled=True,
    short="sliding", colour=KIND_COLORS["fill"], symbol="hexagon-open",
    lesson='a sliding-window block mask skips the blocks no query sees',
    lesson_claim='its cost follows the blocks it visits'))

def stages_where(**facts) -> tuple[str, ...]:
    """The registered stages whose facts (Stage's fields: swept, has_ncu, ncu_swept, has_training,
    training_ncu, fused, variant_of, repeats, dispatched, in_article, snapshot, ...) have these
    values, in the registry's order:
    ``stages_where(has_training=True, fused=True)``. Every stage list of the book is one."""
    for name in facts:
        if name not in Stage.__dataclass_fields__:
            raise ValueError(f"Stage has no fact {name!r}")
    return tuple(n for n, st in STAGES.items() if all(getattr(st, k) == v for k, v in facts.items()))


def get_stage(name: str) -> Stage:
    """The registered stage called `name`; a clear error lists the others."""
    try:
        return STAGES[name]
    except KeyError:
        raise ValueError(f"Unknown stage {name!r}. Registered stages: {', '.join(STAGES)}.") from None


# --- beyond the article: FlashAttention-2 from the Hugging Face Hub, through `kernels` ---------
# its hook, helpers/core/hub_kernel.py, loads the kernel (get_kernel("kernels-community/
# flash-attn2", version=3)) in setup(), outside the forward, and lays q, k, v out as [batch, seq,
# heads, head_dim]; a kernel that can't be loaded raises StageUnavailable with the cause and the fix.
register(Stage(
    "hub_flash", "FlashAttention-2 from the Hub",
    "flash_attn_func from kernels-community/flash-attn2 (loaded with kernels), on [batch, seq, heads, dim] inputs",
    None,
    Requirement("the Hub's FlashAttention-2 builds need an Ampere-or-newer GPU (sm 8.0+) and fp16/bf16",
                **AMPERE_HALF, max_head_dim=256),
    guess_kinds=("attention",), hook="helpers.core.hub_kernel",
    swept=False, has_ncu=False, has_training=False, fused=True, variant_of="sdpa_flash",
    short="hub", colour=KIND_COLORS["unknown"], symbol="circle",
    lesson=('upstream FlashAttention-2 outside PyTorch, as the Hub ships it: the same algorithm, another binary '
            '(replayed, a build of the same source, not the Hub\'s download)'),
    lesson_claim='the same kernel takes about the same GPU time'))


# --- the stage lists every page and recorder uses: queries of the registry, after the last
# register() (a stage registered above this line is in each list its facts put it in) -----------
ARTICLE_STAGES = stages_where(in_article=True)   # the source article's six
# the stages that pin one SDPA backend, in the registry's order (math, efficient, flash, cuDNN)
PINNED_BACKENDS = tuple(name for name, stage in STAGES.items() if stage.sdpa_backend)
# of those, the fused ones: the backends that race for the fastest (efficient, flash, cuDNN)
PINNED_FUSED = tuple(name for name in PINNED_BACKENDS if STAGES[name].fused)

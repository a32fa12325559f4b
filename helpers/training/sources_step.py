"""One training step of a stage: the forward under autograd, then the backward, and its memory.

A stage's forward (`Stage.run(inputs, training=True)`) runs in record_function("attn_fwd") with
autograd recording; the backward, `out.backward(grad_out)` with a fixed `grad_out`, runs in
record_function("attn_bwd"). Autograd runs it on its own thread (one per CUDA device), so its
launches come from that thread, tied to the autograd node that made them (`MmBackward0`, ...).

What is measured here, live:
- `held_for_backward`: what autograd keeps between forward and backward, as the allocator sees it
  (allocated after the forward minus before) and tensor by tensor (saved_tensors_hooks);
- `step_memory`: the peak of one training step above its inputs;
- `seq_ladder`: that peak at seq = 512, 1024, 2048, ... until the GPU runs out of memory (or a cap
  or a time budget ends the search), so the largest seq a stage fits is the last that ran;
- `inplace_under_autograd`: does in-place masking still run when autograd records, and what
  happens when it writes into a tensor autograd saved;
- `memory_snapshot`: PyTorch's allocator history of one step (`_record_memory_history`).
"""
from __future__ import annotations

import gc
import pickle
import time
import warnings
from contextlib import contextmanager
from dataclasses import replace
from typing import Callable

import torch

from ..core.stages import DEFAULT_SHAPE, Shape, Stage, get_stage, reset_compiled
from ..sources.capture import Step

from .core import BACKWARD_ANNOTATION, TRAINING_STAGES  # noqa: F401

GRAD_SEED = 1


def prepare(inputs: dict) -> dict:
    """q, k, v that want gradients, and a fixed grad_output (seeded, the output's shape)."""
    for name in ("q", "k", "v"):
        inputs[name].requires_grad_(True)
    q = inputs["q"]
    gen = torch.Generator(device=q.device).manual_seed(GRAD_SEED)
    inputs["grad_out"] = torch.randn(q.shape, device=q.device, dtype=q.dtype, generator=gen)
    return inputs


@contextmanager
def _quiet_first_backward():
    """The first backward on autograd's fresh thread makes torch warn that cuBLAS found no current
    CUDA context and set the primary one: expected there, and noise on the page."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Attempting to run cuBLAS, but there was no current CUDA context")
        yield


def train_step(stage: Stage, inputs: dict) -> None:
    """Forward in attn_fwd, backward with the fixed grad_output in attn_bwd; gradients dropped
    after it, as `zero_grad(set_to_none=True)` would, so no step accumulates into the last one's."""
    out = stage.run(inputs, training=True)
    with torch.profiler.record_function(BACKWARD_ANNOTATION), _quiet_first_backward():
        out.backward(inputs["grad_out"])
    for name in ("q", "k", "v"):
        inputs[name].grad = None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _allocated(device: torch.device) -> int:
    return torch.cuda.memory_allocated(device) if device.type == "cuda" else 0


def held_for_backward(stage: Stage, inputs: dict) -> dict:
    """What autograd keeps between forward and backward, two ways.

    `held_bytes`: allocated after the forward minus before it (on CUDA; the output included,
    `output_bytes` says how much of it that is). `saved`: each tensor autograd's nodes saved, by
    saved_tensors_hooks, with whether it is one of the inputs (q, k, v, the mask: kept anyway)
    and whether it is seq × seq; `saved_new_bytes` sums the storages that are not inputs, once
    each. A compiled stage's graph may not call the hooks (then `saved` is empty and says so)."""
    q = inputs["q"]
    device, seq = q.device, inputs["shape"].seq
    input_storages = {t.untyped_storage().data_ptr() for k in ("q", "k", "v", "mask", "grad_out")
                      if isinstance(t := inputs.get(k), torch.Tensor)}
    saved: list[dict] = []

    def pack(t: torch.Tensor):
        size = tuple(t.shape)
        saved.append({"shape": list(size), "dtype": str(t.dtype).removeprefix("torch."),
                      "bytes": t.numel() * t.element_size(),
                      "storage": t.untyped_storage().data_ptr(),
                      "storage_bytes": t.untyped_storage().nbytes(),
                      "input": t.untyped_storage().data_ptr() in input_storages,
                      "seq_by_seq": len(size) >= 2 and size[-1] == seq and size[-2] == seq})
        return t

    _sync(device)
    before = _allocated(device)
    hooks_error = None
    if stage.compiled:
        # under the hooks dynamo would trace (or recompile) the graph again: not listed
        hooks_error = "a compiled graph's saved tensors are not listed (the hooks would recompile it)"
        out = stage.run(inputs, training=True)
    else:
        try:
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                out = stage.run(inputs, training=True)
        except Exception as err:  # noqa: BLE001 - say why the list is empty
            hooks_error = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
            saved.clear()
            out = stage.run(inputs, training=True)
    _sync(device)
    after = _allocated(device)
    output_bytes = out.numel() * out.element_size()
    out.backward(inputs["grad_out"])
    for name in ("q", "k", "v"):
        inputs[name].grad = None
    del out
    new, ids = {}, {}
    for s in saved:
        if not s["input"]:
            new[s["storage"]] = s["storage_bytes"]
        # the address means nothing once freed: keep which saved tensors share a storage
        s["storage"] = ids.setdefault(s["storage"], len(ids))
    return {"held_bytes": after - before, "output_bytes": output_bytes, "saved": saved,
            "saved_new_bytes": sum(new.values()),
            "saved_seq_by_seq": any(s["seq_by_seq"] and not s["input"] for s in saved),
            "hooks_error": hooks_error}


def free_memory() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def step_memory(stage: Stage, shape: Shape, device: str = "cuda") -> dict:
    """One training step on fresh inputs (after one warm-up step): its peak above the inputs,
    what it held between forward and backward, and its time."""
    inputs = prepare(stage.make_inputs(shape, device))
    dev = inputs["q"].device
    try:
        train_step(stage, inputs)  # warm-up: a compiled stage compiles here
        _sync(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        inputs_bytes = _allocated(dev)
        started = time.perf_counter()
        train_step(stage, inputs)
        _sync(dev)
        seconds = time.perf_counter() - started
        peak = torch.cuda.max_memory_allocated(dev) - inputs_bytes
        held = held_for_backward(stage, inputs)
        return {"inputs_bytes": inputs_bytes, "peak_bytes": peak, "held_bytes": held["held_bytes"],
                "saved_new_bytes": held["saved_new_bytes"], "saved_seq_by_seq": held["saved_seq_by_seq"],
                "step_seconds": seconds}
    finally:
        inputs.clear()


def seq_ladder(stage: str, base: Shape = DEFAULT_SHAPE, start: int = 512, cap: int = 65536,
               budget_s: float = 60.0, slow_s: float = 10.0, device: str = "cuda") -> list[dict]:
    """Peak memory of one training step at seq = start, 2·start, ... (powers of two), until the
    GPU runs out of memory, seq passes `cap`, a step takes over `slow_s` or `budget_s` is spent.

    Each row says what ended it: "ok", "oom" (torch.OutOfMemoryError: the last "ok" row is the
    largest seq that fits) or "error"; the caller reads `stopped` from the last row."""
    st = get_stage(stage)
    rows, seq, started = [], start, time.perf_counter()
    if st.compiled:
        reset_compiled()
    while seq <= cap:
        shape = replace(base, seq=seq)
        row = {"stage": stage, "seq": seq, "batch": shape.batch, "heads": shape.heads,
               "head_dim": shape.head_dim, "dtype": shape.dtype}
        try:
            row |= step_memory(st, shape, device) | {"status": "ok"}
        except torch.OutOfMemoryError as err:
            row |= {"status": "oom", "error": str(err).splitlines()[0][:200]}
        except Exception as err:  # noqa: BLE001 - a stage that fails at one seq must not end the others
            row |= {"status": "error", "error": f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"}
        free_memory()
        rows.append(row)
        if row["status"] != "ok":
            break
        spent = time.perf_counter() - started
        if seq * 2 > cap:
            row["stopped"] = "cap"
            break
        # the next try costs about 4× this one (the FLOPs grow with seq²)
        if row["step_seconds"] * 4 > slow_s or spent + row["step_seconds"] * 8 > budget_s:
            row["stopped"] = "time"
            break
        seq *= 2
    return rows


def inplace_under_autograd(shape: Shape | None = None, device: str = "cpu") -> list[dict]:
    """Three maskings under autograd, each run for real (forward, then backward) on `device`:

    - out-of-place masked_fill on the scores (naive);
    - in-place masked_fill_ on the scores (the in-place stage): autograd saved nothing of the
      scores before the mask (scaling by a number keeps no tensor), so the write is allowed;
    - in-place masked_fill_ on the softmax's output (masking after softmax), which SoftmaxBackward
      saved: autograd's version counter notices at the backward.
    Each row: ran forward, ran backward, the error's first line, the saved tensors."""
    shape = shape or Shape(batch=1, heads=2, seq=64, head_dim=16, dtype="float32")
    naive = get_stage("naive")
    rows = []

    def after_softmax(x):
        scores = (x["q"] @ x["k"].transpose(-2, -1)) * x["scale"]
        p = torch.softmax(scores, dim=-1)
        p.masked_fill_(x["mask"], 0.0)  # writes into the tensor SoftmaxBackward saved
        return p @ x["v"]

    variants: list[tuple[str, str, Callable]] = [
        ("naive", "scores.masked_fill(mask, -inf)", get_stage("naive").forward),
        ("inplace", "scores.masked_fill_(mask, -inf)", get_stage("inplace").forward),
        ("after_softmax", "softmax(scores).masked_fill_(mask, 0)", after_softmax)]
    for name, code, forward in variants:
        row = {"variant": name, "code": code, "forward_ran": False, "backward_ran": False, "error": None}
        # run plainly first: autograd's check of saved tensors' versions is skipped for tensors
        # packed by saved_tensors_hooks, so the hooks would hide the very error asked about
        inputs = prepare(naive.make_inputs(shape, device))
        try:
            with torch.enable_grad():
                out = forward(inputs)
            row["forward_ran"] = True
            with _quiet_first_backward():   # in a pooled kernel this may be the process's first backward
                out.backward(inputs["grad_out"])
            row["backward_ran"] = True
        except RuntimeError as err:
            row["error"] = str(err).splitlines()[0]
        # then list what autograd saved (each storage once)
        inputs = prepare(naive.make_inputs(shape, device))
        storages: dict[int, dict] = {}

        def pack(t):
            storages.setdefault(t.untyped_storage().data_ptr(),
                                {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."),
                                 "bytes": t.untyped_storage().nbytes()})
            return t

        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            forward(inputs)
        inputs_at = {inputs[k].untyped_storage().data_ptr() for k in ("q", "k", "v", "mask")}
        row["saved"] = [v | {"input": k in inputs_at} for k, v in storages.items()]
        row["saved_seq_by_seq"] = sum(1 for k, v in storages.items() if k not in inputs_at
                                      and v["shape"][-2:] == [shape.seq, shape.seq])
        rows.append(row)
    return rows


@contextmanager
def _history(max_entries: int = 100000):
    torch.cuda.memory._record_memory_history(max_entries=max_entries, stacks="python")
    try:
        yield
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)


def memory_snapshot(stage: str, shape: Shape) -> tuple[bytes, dict]:
    """The allocator's history of one training step (after a warm-up step), as PyTorch's
    `_dump_snapshot` writes it (a pickle pytorch.org/memory_viz opens), and the wall-clock
    microseconds at which the forward began, the backward began and the step ended."""
    st = get_stage(stage)
    inputs = prepare(st.make_inputs(shape, "cuda"))
    train_step(st, inputs)
    torch.cuda.synchronize()
    free_memory()
    marks = {}
    with _history():
        torch.cuda.synchronize()
        marks["forward_us"] = time.time_ns() / 1000
        out = st.run(inputs, training=True)
        torch.cuda.synchronize()
        marks["backward_us"] = time.time_ns() / 1000
        out.backward(inputs["grad_out"])
        del out
        for name in ("q", "k", "v"):
            inputs[name].grad = None
        torch.cuda.synchronize()
        marks["end_us"] = time.time_ns() / 1000
        snapshot = torch.cuda.memory._snapshot()
    inputs.clear()
    free_memory()
    return pickle.dumps(snapshot), marks


# --- the backward under Nsight Compute -------------------------------------------------------

SNAPSHOT_SHAPE = Shape(batch=1, heads=4, seq=1024, head_dim=64)  # a modest step: its snapshot stays small
MARKER_KERNEL = "spin_kernel"  # torch.cuda._sleep's kernel: launched once before each stage's backward


def profile_backwards(stages: str, shape_key: str, log: str, warmup: int = 2) -> None:
    """Run in the process ncu profiles: per stage, warm-up steps, then one forward outside the
    profiled range and its backward inside it, after one marker kernel (torch.cuda._sleep) that
    separates the stages in ncu's table. `log` gets the stages that ran, in order."""
    import json
    shape = Shape.from_key(shape_key)
    done = []
    for name in stages.split(","):
        st = get_stage(name)
        try:
            inputs = prepare(st.make_inputs(shape, "cuda"))
            for _ in range(warmup):
                train_step(st, inputs)
            out = st.run(inputs, training=True)
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
            torch.cuda._sleep(1)
            out.backward(inputs["grad_out"])
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            done.append(name)
        except Exception as err:  # noqa: BLE001 - the others still run
            print(f"profile_backwards: {name} failed: {err}", flush=True)
        finally:
            inputs = None
            free_memory()
    with open(log, "w") as f:
        json.dump(done, f)


def gib(n: float) -> float:
    return n / 2**30


__all__ = ["TRAINING_STAGES", "BACKWARD_ANNOTATION", "prepare", "train_step", "held_for_backward",
           "step_memory", "seq_ladder", "inplace_under_autograd", "memory_snapshot",
           "profile_backwards", "SNAPSHOT_SHAPE"]


def _held(stage: Stage, inputs: dict) -> dict:
    return {"training": held_for_backward(stage, inputs)}


# the step the training chapter hands to the one capture (helpers.sources.capture.capture(step=...))
TRAINING_STEP = Step("training", run=train_step, prepare=prepare, beside=_held, keeps_code=False)

"""The naive_compiled page: what torch.compile makes of the naive code.

Against the naive stage's trace: which ops Inductor fused into one Triton kernel (its name lists
them, its generated source shows them), which stay cuBLAS gemms (the same nvjet kernels as naive),
where the Memcpy went, what a compiled call costs on the CPU (guards, the compiled graph's
launcher), and what the first call costs (compilation). Every figure comes from the traces and
their provenance."""
from __future__ import annotations

import re

import pandas as pd
from IPython.display import Markdown

from ..core import inductor
from ..core.bound import later_calls, of_call
from ..core.names import decode
from ..core.profile import Profile
from ..core.wording import sentence_for
from ..views.tables import mark_gpus
from ..views.prose import glue
from ..views.verdicts import Verdict, table, verdict

# what Inductor's op names mean, for a reader who knows the three lines of naive code
OP_MEANINGS = {
    "mul": "* scale: the scaling of the scores",
    "masked_fill": ".masked_fill(mask, -inf): the causal mask",
    "_softmax": "torch.softmax: the softmax these ops decompose",
    "prepare_softmax_online": "the row's max and sum of exponentials, softmax's two statistics (the name "
                              "is online softmax's: a looping kernel keeps a running max and rescales its "
                              "sum; a persistent one holds the row in registers, takes the max, then the sum)",
    "amax": "the row's maximum (softmax, subtracted for stability)",
    "sub": "x - max: softmax's shift by the row maximum",
    "exp": "exp(x - max): softmax's numerator",
    "sum": "the row's sum of exponentials: softmax's denominator",
    "div": "exp / sum: softmax's division",
    "view": "a view of the batched matmul's output as [batch, heads, seq, seq] (no data moves)",
    "where": "where(mask, -inf, x): masked_fill, as Inductor writes it",
    "full": "the -inf constant of the mask",
}
TRITON_CLASSES = {
    "per": "persistent reduction: each program holds a whole row in registers, so the max, the sum "
           "and the normalisation need one read of the row",
    "red": "reduction: each program loops over its row in chunks",
    "poi": "pointwise: one element per thread, no reduction",
    "tem": "template: a hand-written Triton kernel that Inductor fills in",
}
# the CPU lane of one compiled call: what each layer is (names as the profiler writes them)
CPU_LAYERS = (
    ("attn_fwd", "the annotation around one forward"),
    ("TorchDynamo Cache Lookup", "Dynamo's guards: do the inputs still match what was compiled "
                                 "(shapes, strides, dtypes, devices)? If so, reuse that code"),
    ("Torch-Compiled Region", "the compiled frame; the numbers are the compile id "
                              "(frame / recompilation)"),
    ("Pregraph bytecode", "Python that Dynamo runs before the graph: unpacking the arguments"),
    ("AOTDispatcher Runtime Wrapper Prologue", "AOTAutograd's runtime wrapper: sets up the call "
                                               "(grad mode, the inputs list)"),
    ("## Call CompiledFxGraph", "Inductor's generated call(): the compiled graph's launcher, "
                                "which runs each kernel in order"),
    ("aten::", "an extern_kernels call: Inductor leaves this op to ATen (for a matmul, cuBLAS)"),
    ("triton_", "the Triton kernel's launcher: picks the compiled binary and launches it"),
)


def _kernels(prof: Profile) -> pd.DataFrame:
    return prof.kernels()


def fused_kernel(prof: Profile) -> pd.Series:
    """The forward's Inductor-generated (Triton) kernel; if several, the longest."""
    k = _kernels(prof)
    k = k[k["library"] == "Triton"]
    if k.empty:
        raise ValueError(f"the {prof.stage} forward has no Triton kernel")
    return k.sort_values("dur_us").iloc[-1]


def generated_code(prof: Profile) -> list[str] | None:
    """Inductor's output code of this trace's compiled graph, as recorded (or captured live)."""
    extra = getattr(prof.provenance, "extra", None) or {}
    code = extra.get("generated_code")
    return list(code) if code else None


def name_fields(prof: Profile) -> pd.DataFrame:
    """The fused kernel's name, token by token: what each part says."""
    k = fused_kernel(prof)
    d = decode(k["name"]).details
    rows = [{"part": "triton_", "reads as": "a kernel Inductor generated, in Triton"},
            {"part": d["class_token"],
             "reads as": TRITON_CLASSES.get(d["class_token"], d["kernel_class"])}]
    for op in d["fused_ops"]:
        rows.append({"part": op, "reads as": "fused: " + OP_MEANINGS.get(op, "an aten op of the graph")})
    if d.get("index") is not None:
        rows.append({"part": str(d["index"]), "reads as": "its index among the kernels of the compiled graph"})
    return pd.DataFrame(rows, columns=["part", "reads as"]).set_index("part")


def fused_nodes(prof: Profile) -> pd.DataFrame:
    """From the generated code: each Python-level node fused into the kernel, and its aten nodes."""
    k = inductor.kernel(generated_code(prof), fused_kernel(prof)["name"])
    if k is None:
        return pd.DataFrame(columns=["node of the compiled function", "became (aten nodes)"]
                            ).set_index("node of the compiled function")
    # in the graph's order where the comment gives it (its source-node list is topologically sorted)
    nodes = [n for n in k.source_nodes if n in k.node_to_aten] + \
        [n for n in k.node_to_aten if n not in k.source_nodes]
    return pd.DataFrame({"node of the compiled function": nodes,
                         "became (aten nodes)": [", ".join(k.node_to_aten[n]) for n in nodes]}
                        ).set_index("node of the compiled function")


def _missing_code(prof: Profile) -> Markdown:
    return Markdown(f"*This {prof.mode} trace of `{prof.stage}` holds no generated code "
                    f"(`provenance.extra['generated_code']`): it was recorded before the recorder kept "
                    f"it. Record it again on a GPU with `python tools/record.py --stages {prof.stage}`.*")


def triton_source(prof: Profile, name: str | None = None) -> Markdown:
    """The Triton source of the fused kernel (or of `name`), as Inductor generated it."""
    name = name or fused_kernel(prof)["name"]
    k = inductor.kernel(generated_code(prof), name)
    if k is None:
        return _missing_code(prof)
    where = "captured live just now" if prof.mode == "live" else \
        f"recorded with the trace on {prof.provenance.gpu}, torch {prof.provenance.torch}"
    return Markdown(f"`{k.name}`, {k.lines} lines ({where}):\n\n```python\n{reader_source(k.source)}\n```")


# the keyword arguments of Inductor's decorator that hold its compile settings as Python dicts
# (argument types, the GPU's properties, cache and autotuning flags): a page shows them as one comment
_SETTINGS = re.compile(r"^(\s*)(triton_meta|inductor_meta)=.*$")


def reader_source(source: str) -> str:
    """Inductor's generated kernel as a reader reads it: the decorator's two dicts of compile
    settings (`triton_meta`, `inductor_meta`, one line each) replaced by one comment saying what
    they hold; every other line as generated."""
    out, said = [], False
    for line in source.splitlines():
        m = _SETTINGS.match(line)
        if not m:
            out.append(line)
        elif not said:
            out.append(f"{m.group(1)}# … and Inductor's compile settings for this kernel (argument types, "
                       "this GPU's properties, cache and autotuning flags), left out here")
            said = True
    return "\n".join(out)


def call_source(prof: Profile) -> Markdown:
    """The generated `call()`: what one compiled call runs, in order."""
    body = inductor.call_function(generated_code(prof))
    if body is None:
        return _missing_code(prof)
    return Markdown(f"```python\n{body}\n```")


def launch_order(prof: Profile) -> pd.DataFrame:
    """What `call()` launches, line by line, beside the GPU events of the forward in the trace."""
    launched = inductor.launched_in_call(generated_code(prof))
    k = _kernels(prof)
    k = k[k["category"] == "kernel"].reset_index(drop=True)
    rows = []
    for i in range(max(len(launched), len(k))):
        rows.append({"call() runs": launched[i] if i < len(launched) else None,
                     "the trace's kernel": k["name"].iloc[i] if i < len(k) else None,
                     "library": k["library"].iloc[i] if i < len(k) else None,
                     "launched by": k["launched_by"].iloc[i] if i < len(k) else None})
    frame = pd.DataFrame(rows, columns=["call() runs", "the trace's kernel", "library", "launched by"])
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="#")
    return frame


def gemms(compiled: Profile, naive: Profile) -> pd.DataFrame:
    """The matmuls of both forwards side by side, one row each, from their kernel events: the
    same kernel, launched the same way (grid, block, registers, shared memory, launch call)?"""
    def rows(prof):
        k = _kernels(prof)
        return k[k["kind"] == "gemm"].reset_index(drop=True)
    a, b = rows(naive), rows(compiled)
    launch = ("grid", "block", "registers_per_thread", "shared_memory_bytes", "launched_by")
    out = []
    for i in range(max(len(a), len(b))):
        ra = a.iloc[i] if i < len(a) else None
        rb = b.iloc[i] if i < len(b) else None
        both = ra is not None and rb is not None
        out.append({
            "gemm": i + 1,
            f"kernel in {naive.stage}": None if ra is None else ra["name"],
            f"kernel in {compiled.stage}": None if rb is None else rb["name"],
            "same kernel?": "same" if both and ra["name"] == rb["name"] else "differs",
            "same launch?": "same" if both and all(str(ra[c]) == str(rb[c]) for c in launch) else "differs",
            f"{naive.stage} µs": None if ra is None else round(float(ra["dur_us"]), 1),
            f"{compiled.stage} µs": None if rb is None else round(float(rb["dur_us"]), 1)})
    return mark_gpus(pd.DataFrame(out).set_index("gemm"), [naive, compiled])


def layer_of(name: str) -> str:
    for prefix, meaning in CPU_LAYERS:
        if name.startswith(prefix):
            return meaning
    return ""


def cpu_layers(prof: Profile) -> pd.DataFrame:
    """The CPU lane of one compiled call: each op nested by depth, what it is, its time and self time."""
    ops = prof.cpu_ops()
    frame = pd.DataFrame({
        "op": ["\u2003" * d + n for d, n in zip(ops["depth"], ops["name"])],
        "what it is": [layer_of(n) for n in ops["name"]],
        "µs": ops["dur_us"].round(1), "self µs": ops["self_us"].round(1),
    }).reset_index(drop=True)
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="#")
    return frame


def cpu_compare(profiles: dict[str, Profile]) -> pd.DataFrame:
    """Per forward: ops on the CPU lane, aten ops among them, CPU time, and what a call costs: the
    caller's loop per call (median; none without the caller's timer) and do_bench's cold call."""
    rows = []
    for name, prof in profiles.items():
        ops, s = prof.cpu_ops(), prof.summary()
        rows.append({"stage": name, "CPU ops under attn_fwd": len(ops) - 1,
                     "aten ops": int(s["aten_ops"]), "attn_fwd CPU µs": round(float(s["cpu_time_us"]), 1),
                     "GPU µs": round(float(s["gpu_time_us"]), 1),
                     "loop µs per call": None if of_call(s) is None else round(of_call(s).wall_us, 1),
                     "do_bench µs per call": None if s["do_bench_us"] is None else round(float(s["do_bench_us"]), 1)})
    return mark_gpus(pd.DataFrame(rows).set_index("stage"), profiles)


def forward_memory(profiles: dict[str, Profile]) -> pd.DataFrame:
    """Per stage: memory allocated before one forward, the peak during it, and what the forward
    itself needed, also counted in [batch, heads, seq, seq] score matrices of the stage's dtype."""
    rows = []
    for name, prof in profiles.items():
        peak, before = _field(prof, "peak_memory_bytes"), _field(prof, "memory_before_bytes")
        s = prof.shape
        scores = s.batch * s.heads * s.seq * s.seq * _dtype_bytes(s.dtype)
        need = None if peak is None or before is None else peak - before
        rows.append({"stage": name,
                     # MiB, as the in-place chapter counts the same quantity (prose.glue_summary)
                     "allocated before (MiB)": None if before is None else round(before / 2**20, 1),
                     "peak during the forward (MiB)": None if peak is None else round(peak / 2**20, 1),
                     "the forward needed (MiB)": None if need is None else round(need / 2**20, 1),
                     "in score matrices": None if need is None else round(need / scores, 2),
                     "measured": f"{prof.mode} on {prof.provenance.gpu}"})
    return mark_gpus(pd.DataFrame(rows).set_index("stage"), profiles)


def _dtype_bytes(dtype: str) -> int:
    return {"bfloat16": 2, "float16": 2, "float32": 4}[dtype]


# --- the first call ----------------------------------------------------------------------------

def _field(prof: Profile, name: str):
    return getattr(prof.provenance, name, None)


def first_call(compiled: Profile, naive: Profile | None = None) -> pd.DataFrame:
    """What the first call costs against a later one, and (against naive) when compiling pays off.
    A later call: the caller's loop per call where every stage shown has it, else do_bench's
    cold call (`bound.later_calls`; the column *timed by* says which)."""
    rows = []
    shown = [p for p in (naive, compiled) if p is not None]
    calls, by = later_calls(*(p.summary() for p in shown))
    for prof, call in zip(shown, calls):
        first = _field(prof, "first_call_seconds")
        rows.append({"stage": prof.stage,
                     "first call (s)": None if first is None else round(first, 2),
                     "a later call (µs)": None if call is None else round(call, 1),
                     "first call / later call": None if first is None or not call else round(first * 1e6 / call),
                     "timed by": by, "measured": f"{prof.mode} on {prof.provenance.gpu}"})
    # two GPUs: the "measured on" column's mark names the one of another GPU (mark_gpus)
    return mark_gpus(pd.DataFrame(rows).set_index("stage"), shown)


def payoff_calls(compiled: Profile, naive: Profile) -> int | None:
    """Calls after which the compiled stage has saved its first call's extra cost; None if never."""
    fc, fn = _field(compiled, "first_call_seconds"), _field(naive, "first_call_seconds")
    (cc, cn), _ = later_calls(compiled.summary(), naive.summary())
    if None in (fc, fn, cc, cn) or cn <= cc:
        return None
    extra_us = (fc - fn) * 1e6
    return max(0, int(-(-extra_us // (cn - cc))))  # ceil


def glue_first_call(compiled: Profile, naive: Profile) -> dict:
    """Glue the first-call figures as `compiled_first_call_s`, ... (absent fields glue as 'not recorded')."""
    fc, fn = _field(compiled, "first_call_seconds"), _field(naive, "first_call_seconds")
    (call, _naive), _ = later_calls(compiled.summary(), naive.summary())  # the first-call table's timer
    values = {
        "compiled_first_call_s": "not recorded" if fc is None else f"{fc:.2f}",
        "naive_first_call_ms": "not recorded" if fn is None else f"{fn * 1e3:.1f}",
        "compiled_first_over_call": "not recorded" if fc is None or not call else f"{fc * 1e6 / call:,.0f}",
        "compiled_payoff_calls": "never" if payoff_calls(compiled, naive) is None else f"{payoff_calls(compiled, naive):,}",
        "compiled_first_call_where": (f"live on {compiled.provenance.gpu}" if compiled.mode == "live" else
                                      f"on {compiled.provenance.gpu}, replayed from the recording"),
    }
    for key, value in values.items():
        glue(key, value)
    return values


# --- glue and verdicts -------------------------------------------------------------------------

def glue_page(compiled: Profile, naive: Profile) -> dict:
    """Glue the figures of the page's prose that no table already gives."""
    k = fused_kernel(compiled)
    d = decode(k["name"]).details
    s = compiled.shape
    e = _kernels(compiled)
    values = {
        "compiled_fused_name": k["name"], "compiled_fused_ops": len(d["fused_ops"]),
        "compiled_fused_us": round(float(k["dur_us"]), 1),
        "compiled_fused_grid": int(k["grid_blocks"]) if pd.notna(k["grid_blocks"]) else "not recorded",
        "compiled_fused_threads": int(k["threads_per_block"]) if pd.notna(k["threads_per_block"]) else "not recorded",
        "compiled_rows": s.batch * s.heads * s.seq,
        "compiled_gemms": int((e["kind"] == "gemm").sum()),
        "naive_unfused_us": round(float(_between_gemms(naive)["dur_us"].sum()), 1),
        "naive_unfused_events": len(_between_gemms(naive)),
    }
    memory = forward_memory({naive.stage: naive, compiled.stage: compiled})["in score matrices"]
    values |= {f"{stage}_memory_scores": "not recorded" if pd.isna(v) else f"{v:.2f}"
               for stage, v in memory.items()}
    g = inductor.kernel(generated_code(compiled), k["name"])
    values["compiled_in_place"] = (
        "not in this trace (no generated code)" if g is None else
        "reads the scores and writes the probabilities over them, in place (its argument in_out_ptr0)"
        if re.search(rf"def {re.escape(g.name)}\([^)]*\bin_out_ptr\d", g.source) else
        "writes the probabilities to a buffer of their own")
    for key, value in values.items():
        glue(key, value)
    return values


def _between_gemms(prof: Profile) -> pd.DataFrame:
    """The GPU events between the forward's first and last gemm (the score-matrix passes)."""
    e = _kernels(prof)
    idx = list(e.index[e["kind"] == "gemm"])
    if len(idx) < 2:
        return e.iloc[0:0]
    return e.loc[idx[0] + 1:idx[-1] - 1]


@verdict("naive_compiled", needs=("naive",))
def verdict_list(compiled: Profile, naive: Profile) -> list[Verdict]:
    e, n = _kernels(compiled), _kernels(naive)
    between = _between_gemms(compiled)
    between_kernels = between[between["category"] == "kernel"]
    out = []

    # one Triton kernel between the two gemms, whose name lists the scale, the mask and the softmax
    triton = between_kernels[between_kernels["library"] == "Triton"]
    ops = decode(triton["name"].iloc[0]).details["fused_ops"] if len(triton) else []
    wanted = ("mul", "masked_fill", "_softmax")
    out.append(Verdict(
        "scale, mask and softmax fuse into one Triton kernel between the two matmuls",
        # kernel names hold commas of their own: listed one after the other, the count alone for none
        f"{len(between_kernels)} kernel{'' if len(between_kernels) == 1 else 's'} between the gemms"
        + (f": {', '.join(between_kernels['name'])}" if len(between_kernels) else "")
        + (f"; its name lists {', '.join(ops)}" if ops else ""),
        len(between_kernels) == 1 and len(triton) == 1 and all(o in ops for o in wanted),
        f"{len(between_kernels)} kernels between the gemms"
        + (f", missing {', '.join(o for o in wanted if o not in ops)}" if len(triton) else ", none from Triton")))

    # the matmuls stay library calls: the same cuBLAS kernels, with the same launch, as naive
    gc, gn = e[e["kind"] == "gemm"], n[n["kind"] == "gemm"]
    same = list(gc["name"]) == list(gn["name"])
    out.append(Verdict(
        "the matmuls stay cuBLAS gemms: the same kernels as naive",
        f"{compiled.stage}: {', '.join(gc['name'])} ({', '.join(sorted(set(gc['library'])))}); "
        f"{naive.stage}: {', '.join(gn['name'])}",
        same and len(gc) > 0 and not gc["library"].eq("Triton").any(),
        "different gemm kernels" if not same else "a Triton gemm"))

    # the Memcpy is gone, and no masked_fill_ did it: no masking op is left on the CPU lane
    mc, mn = int((e["kind"] == "memcpy").sum()), int((n["kind"] == "memcpy").sum())
    masking = sorted({o for o in compiled.cpu_ops()["name"] if o.startswith("aten::masked_fill")})
    out.append(Verdict(
        "the Memcpy is gone without masked_fill_: the fused kernel masks as it reads",
        f"{mc} memcpy per forward here, {mn} in {naive.stage}; "
        + sentence_for(masking, none="no masking op on the CPU lane", one="masking op on the CPU lane: {name}",
                       several="masking ops on the CPU lane: {names}"),
        mc == 0 and mn > 0 and not masking,
        f"{mc} memcpy remain" if mc else f"{naive.stage} had no memcpy either" if not mn else "a masked_fill op runs"))

    # one block per row of the scores: the persistent reduction's grid is batch x heads x seq
    if len(triton):
        row = triton.iloc[0]
        s = compiled.shape
        rows = s.batch * s.heads * s.seq
        blocks = int(row["grid_blocks"]) if pd.notna(row["grid_blocks"]) else None
        out.append(Verdict(
            "the fused kernel gives each row of the scores its own block (grid = batch × heads × seq)",
            f"grid {row['grid']} = {blocks} blocks of {row['threads_per_block']} threads; "
            f"{s.batch} × {s.heads} × {s.seq} = {rows} rows",
            blocks == rows, f"{blocks} blocks for {rows} rows"))

    # and it is faster on the GPU than the eager code it came from
    gc_us, gn_us = compiled.summary()["gpu_time_us"], naive.summary()["gpu_time_us"]
    out.append(Verdict(
        f"faster on the GPU than {naive.stage}",
        f"{compiled.stage} {gc_us:.1f} µs, {naive.stage} {gn_us:.1f} µs per forward ({gn_us / gc_us:.2f}× faster)",
        gc_us < gn_us, f"{gc_us / gn_us:.2f}× the GPU time of {naive.stage}"))
    return out


def verdicts(compiled: Profile, naive: Profile) -> pd.DataFrame:
    """What this page claims about naive_compiled against naive, each computed from the two traces."""
    return table(verdict_list(compiled, naive)).rename(columns={"the article": "this page claims"})

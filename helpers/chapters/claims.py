"""What the article teaches, checked on the reader's GPU: each claim computed from the trace,
with a verdict, "holds" or "differs: ...", for whatever GPU the trace comes from."""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import pandas as pd

from ..core.bound import later_calls
from ..core.profile import Profile
from ..core.article import A100_MATH_OVER_INPLACE, A100_REFERENCE
from ..core.stages import STAGES
from ..views.tables import mark_gpus
from ..views.verdicts import VERDICTS, Verdict, table, verdict

Profiles = Mapping[str, Profile]


def _events(prof: Profile) -> pd.DataFrame:
    return prof.kernels()


def _ops(prof: Profile) -> set[str]:
    return set(prof.cpu_ops()["name"])


def scores_bytes(prof: Profile) -> int:
    """Bytes of one [batch, heads, seq, seq] score matrix in the stage's dtype."""
    s = prof.shape
    return s.batch * s.heads * s.seq * s.seq * s.element_size


def hidden_memcpy(prof: Profile) -> Verdict:
    e = _events(prof)
    copies = e[(e["kind"] == "memcpy") & (e["top_aten_op"] == "aten::masked_fill")]
    if len(copies):
        row = copies.iloc[0]
        size = f"{int(row['bytes']):,} B" if pd.notna(row["bytes"]) else "size not recorded"
        evidence = (f"{len(copies)} {row['name']} of {size} ({row['dur_us']:.1f} µs), launched by "
                    f"{row['launched_by']} inside aten::masked_fill → {row['aten_op']}; one score "
                    f"matrix is {scores_bytes(prof):,} B")
        return Verdict("out-of-place masked_fill copies the scores first: a hidden Memcpy", evidence, True)
    return Verdict("out-of-place masked_fill copies the scores first: a hidden Memcpy",
                   "no memcpy under aten::masked_fill", False, "there is no Memcpy in this trace")


def launch_path_of_gemms(prof: Profile) -> Verdict:
    e = _events(prof)
    gemms = e[e["kind"] == "gemm"]
    paths = sorted(set(gemms["launched_by"].dropna()))
    ex = [p for p in paths if p.startswith("cuLaunchKernelEx")]
    evidence = f"{len(gemms)} gemm kernels ({', '.join(sorted(set(gemms['library'])))}) launched by {', '.join(paths)}"
    claim = "cuLaunchKernelEx is the cuDNN stage's launch path; earlier stages use cudaLaunchKernel"
    if ex:
        return Verdict(claim, evidence, False, f"the matmuls already go through {', '.join(ex)} here")
    return Verdict(claim, evidence, True)


def gemms_on_tensor_cores(prof: Profile) -> Verdict:
    e = _events(prof)
    gemms = e[e["kind"] == "gemm"]
    tensor = gemms["math"].eq("tensor cores")
    evidence = "; ".join(f"{n} → {m}" for n, m in zip(gemms["name"], gemms["math"]))
    claim = f"the {prof.shape.dtype} matmuls run on tensor cores"
    if len(gemms) and tensor.all():
        return Verdict(claim, evidence, True)
    return Verdict(claim, evidence, False, f"{(~tensor).sum()} of {len(gemms)} gemms run on CUDA cores (FFMA)")


def memcpy_gone(prof: Profile, before: Profile) -> Verdict:
    now = (_events(prof)["kind"] == "memcpy").sum()
    was = (_events(before)["kind"] == "memcpy").sum()
    evidence = f"{now} memcpy per forward here, {was} in {before.stage}"
    return Verdict("masked_fill_ writes in place: the Memcpy is gone", evidence, now == 0 and was > 0,
                   f"{now} memcpy remain" if now else f"{before.stage} had no memcpy either")


def fewer_masking_ops(prof: Profile, before: Profile) -> Verdict:
    def under(p: Profile, root: str) -> int:
        ops = p.cpu_ops()
        roots = ops[(ops["depth"] == 1) & (ops["name"] == root)]
        if roots.empty:
            return 0
        r = roots.iloc[0]
        return int(((ops["start_us"] >= r["start_us"]) & (ops["end_us"] <= r["end_us"] + 1e-3)).sum())
    now, was = under(prof, "aten::masked_fill_"), under(before, "aten::masked_fill")
    evidence = f"the masking step is {now} CPU ops (aten::masked_fill_ and its children) here, {was} in {before.stage}"
    return Verdict("fewer CPU ops in the masking step", evidence, now < was,
                   f"{now} ops, not fewer than {was}")


def many_kernels(prof: Profile, fused: Profile | None = None) -> Verdict:
    e = _events(prof)
    n, k = len(e), int((e["category"] == "kernel").sum())
    ref = f"; {fused.stage} launches {len(_events(fused))}" if fused is not None else ""
    return Verdict("the math backend launches many kernels per forward, not one",
                   f"{n} GPU events per forward, {k} of them kernels{ref}", n >= 10, f"only {n} GPU events")


def math_fp32_gemms(prof: Profile) -> Verdict:
    e = _events(prof)
    gemms = e[e["kind"] == "gemm"]
    fp32 = gemms["math"].eq("CUDA cores (FFMA)") & gemms["dtype"].eq("fp32")
    evidence = "; ".join(f"{n} → {d}, {m}" for n, d, m in zip(gemms["name"], gemms["dtype"], gemms["math"]))
    copies = e[(e["kind"] == "copy")]
    evidence += f"; {len(copies)} copy kernels convert between dtypes"
    return Verdict(f"math upcasts {prof.shape.dtype} to fp32 and runs CUDA-core (FFMA) gemms", evidence,
                   bool(len(gemms) and fp32.all()), "some gemms run on tensor cores")


def mask_rebuilt(prof: Profile) -> Verdict:
    ops = _ops(prof)
    cpu = [o for o in ("aten::ones", "aten::tril", "aten::where") if o in ops]
    e = _events(prof)
    gpu = e[e["kind"] == "mask"]
    evidence = (f"CPU lane: {', '.join(cpu) or 'none of ones/tril/where'}; GPU lane: "
                + (", ".join(gpu["name"]) or "no mask kernel"))
    return Verdict("the causal mask is rebuilt on every call", evidence, len(cpu) == 3 and len(gpu) > 0,
                   "the mask is not rebuilt in this trace")


def safe_softmax(prof: Profile) -> Verdict:
    ops = _ops(prof)
    children = sorted(o for o in ops if o in ("aten::isneginf", "aten::all", "aten::where"))
    return Verdict("math calls _safe_softmax, which guards rows that are fully masked",
                   f"aten::_safe_softmax {'is' if 'aten::_safe_softmax' in ops else 'is not'} on the CPU lane"
                   + (f", with {', '.join(children)}" if children else ""),
                   "aten::_safe_softmax" in ops, "plain softmax here")


def fully_masked_row() -> pd.DataFrame:
    """Why _safe_softmax exists: a row with every key masked. Computed now, on this machine."""
    import torch
    row = torch.full((1, 4), float("-inf"))
    # written out as text: a table renders a missing number as an empty cell, and the NaN is the point
    shown = lambda values: ["NaN (0 / 0)" if v != v else f"{v:g}" for v in values]  # noqa: E731
    return pd.DataFrame({"torch.softmax": shown(torch.softmax(row, -1)[0].tolist()),
                         "torch._safe_softmax": shown(torch._safe_softmax(row, -1)[0].tolist())},
                        index=pd.Index(range(4), name="key"))


def single_kernel(prof: Profile, library: str) -> Verdict:
    e = _events(prof)
    kernels = e[e["category"] == "kernel"]
    names = ", ".join(kernels["name"])
    ok = len(kernels) == 1 and kernels["library"].iloc[0] == library
    others = e[e["category"] != "kernel"]
    extra = f" plus {len(others)} {', '.join(others['kind'])}" if len(others) else ""
    return Verdict(f"one fused {library} kernel does the whole forward",
                   f"{len(kernels)} kernel{'s' if len(kernels) != 1 else ''}{extra}: {names}", ok,
                   f"{len(kernels)} kernels from {', '.join(sorted(set(kernels['library'])))}")


def hbm_traffic(profiles: Profiles) -> pd.DataFrame:
    """Bytes of the [seq, seq] scores each unfused stage moves, against what flash moves.

    Model: between the two matmuls, each GPU event reads the scores once and writes them once;
    the first matmul writes them and the second reads them. Flash reads q, k, v and writes the
    output, once each. The event count comes from the trace."""
    rows = []
    for name, prof in profiles.items():
        e = _events(prof)
        s = prof.shape
        elt = s.element_size
        qkvo = 4 * s.batch * s.heads * s.seq * s.head_dim * elt
        gemms = list(e.index[e["kind"] == "gemm"])
        if len(gemms) >= 2:
            between = e.loc[gemms[0] + 1:gemms[-1] - 1]
            between = between[between["category"] != "memset"]
            element = 4 if between["dtype"].eq("fp32").any() else elt
            per_matrix = s.batch * s.heads * s.seq * s.seq * element
            passes = 2 * len(between) + 2
            rows.append({"stage": name, "score passes": passes, "score bytes": passes * per_matrix,
                         "q, k, v, out bytes": qkvo})
        else:
            rows.append({"stage": name, "score passes": 0, "score bytes": 0, "q, k, v, out bytes": qkvo})
    frame = pd.DataFrame(rows).set_index("stage")
    frame["total MB"] = ((frame["score bytes"] + frame["q, k, v, out bytes"]) / 1e6).round(1)
    return mark_gpus(frame, profiles)


def no_transposes(cudnn: Profile, others: list[Profile]) -> Verdict:
    count = lambda p: int((p.cpu_ops()["name"] == "aten::transpose").sum())  # noqa: E731
    theirs = ", ".join(f"{p.stage}: {count(p)}" for p in others)
    return Verdict("cuDNN takes the [batch, heads, seq, dim] layout as it is: no aten::transpose on the CPU lane",
                   f"aten::transpose per forward: {cudnn.stage}: {count(cudnn)}; {theirs}",
                   count(cudnn) == 0 and all(count(p) > 0 for p in others),
                   "transposes appear on the cuDNN CPU lane")


def launched_by_ex(prof: Profile) -> Verdict:
    e = _events(prof)
    k = e[e["category"] == "kernel"]
    paths = sorted(set(k["launched_by"].dropna()))
    return Verdict("the cuDNN kernel is launched through cuLaunchKernelEx", f"launched by {', '.join(paths)}",
                   any(p.startswith("cuLaunchKernelEx") for p in paths), f"launched by {', '.join(paths)}")


# the parts of a backend's CPU time in attn_fwd, each host op's self time (its time less its child
# ops') in one part, and each CUDA runtime or driver call in a row of its own (taken out of the op
# that made it): every microsecond of attn_fwd is in exactly one row, so the rows sum to it
CPU_PARTS = (
    ("attn_fwd itself, outside its ops",
     lambda name, depth: depth == 0),
    ("SDPA's entry and dispatch ops",
     lambda name, depth: name.startswith(("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_"))),
    ("transposes (views)",
     lambda name, depth: name in ("aten::transpose", "aten::as_strided")),
    ("allocations (aten::empty*)",
     lambda name, depth: name.startswith("aten::empty")),
    ("the backend's forward op",
     lambda name, depth: name.endswith("_attention_forward")),
    ("other host ops", lambda name, depth: True),
)


def _runtime_calls(prof: Profile, start: float, end: float, tid) -> list[dict]:
    return [e for e in prof.events if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
            and e.get("tid") == tid and start <= float(e["ts"]) and float(e["ts"]) + float(e["dur"]) <= end + 1e-3]


def _round_to_total(column: pd.Series) -> pd.Series:
    """Tenths of a µs that still sum to the rounded total (the last row): each part rounded down,
    and the tenths left over given to the parts that lost the most (largest remainder)."""
    parts, total = column.iloc[:-1] * 10, round(float(column.iloc[-1]) * 10)
    down = parts.apply(math.floor)
    left = int(total - down.sum())
    for label in (parts - down).sort_values(ascending=False).index[:max(left, 0)]:
        down[label] += 1
    return pd.concat([down / 10, pd.Series({column.index[-1]: total / 10})])


def cpu_time_split(profiles: Profiles) -> pd.DataFrame:
    """Where each backend's CPU time in attn_fwd goes, rows that sum to it: the self time of its
    host ops in a few parts (`CPU_PARTS`), and each CUDA runtime or driver call (a launch, a memset,
    a function attribute) in a row of its own, taken out of the self time of the op that made it.
    A backend measured on another GPU than the others has its column's label marked (mark_gpus)."""
    return mark_gpus(_cpu_split(profiles), profiles)


def _cpu_split(profiles: Profiles) -> pd.DataFrame:
    """cpu_time_split's table, its columns "<name> µs" as given (the glue below reads them by name)."""
    columns = {}
    for name, prof in profiles.items():
        ops = prof.cpu_ops().reset_index(drop=True)
        root = ops[ops["depth"] == 0].iloc[0]
        own = ops["self_us"].astype(float).copy()
        parts: dict[str, float] = {}
        for call in _runtime_calls(prof, float(root["start_us"]), float(root["end_us"]), root["tid"]):
            ts, dur = float(call["ts"]), float(call["dur"])
            holders = ops[(ops["start_us"] <= ts) & (ts + dur <= ops["end_us"] + 1e-3)]
            own[holders["depth"].idxmax()] -= dur   # the innermost op that made the call
            kind = "launch" if "Launch" in call["name"] else f"{call['cat'].split('_')[1]} call"
            label = f"{kind}: {call['name']}"
            parts[label] = parts.get(label, 0.0) + dur
        for label, test in CPU_PARTS:
            picked = [i for i, r in ops.iterrows() if test(r["name"], r["depth"])
                      and not any(t(r["name"], r["depth"]) for lab, t in CPU_PARTS[:CPU_PARTS.index((label, test))])]
            parts[label] = float(own[picked].sum()) if picked else 0.0
        parts["total: attn_fwd"] = float(root["dur_us"])
        columns[f"{name} µs"] = parts
    frame = pd.DataFrame(columns).fillna(0.0)
    calls = [i for i in frame.index if ": " in i and i != "total: attn_fwd"]
    order = [label for label, _ in CPU_PARTS] + sorted(calls) + ["total: attn_fwd"]
    frame = frame.loc[[i for i in order if i == "total: attn_fwd" or frame.loc[i].abs().sum() > 0]]
    frame = frame.apply(_round_to_total)
    frame.index.name = "where the CPU time goes"
    frame.attrs = {"caption": "One forward (the last profiled step), the profiler's overhead included. Each host op's "
                              "self time (its time less its child ops' and its CUDA calls') is in one row: attn_fwd's "
                              "own (Python, the call into the dispatcher, the profiler's records); SDPA's entry and "
                              "dispatch (aten::scaled_dot_product_attention, aten::_scaled_dot_product_*); the "
                              "transposes (aten::transpose, aten::as_strided); allocations; the backend's "
                              "aten::_*_attention_forward. Each CUDA runtime or driver call (a launch, a memset, a "
                              "function attribute) has its own row. The rows sum to attn_fwd."}
    return frame


def cpu_difference(lighter: Profile, heavier: Profile, top: int = 3) -> str:
    """In words, the rows of `cpu_time_split` where `heavier` spends the most CPU time beyond
    `lighter`: the few that explain most of the gap."""
    split = _cpu_split({"a": lighter, "b": heavier})
    gap = (split["b µs"] - split["a µs"]).drop("total: attn_fwd").sort_values(ascending=False)
    total = float(split.loc["total: attn_fwd", "b µs"] - split.loc["total: attn_fwd", "a µs"])
    shown = [f"{label.split(' (')[0]} ({split.loc[label, 'b µs']:.1f} against {split.loc[label, 'a µs']:.1f} µs)"
             for label in gap.index[:top]]
    return (f"{heavier.stage} spends {total:.1f} µs more than {lighter.stage}; most of it in "
            + "; ".join(shown))


def launch_note(split: pd.DataFrame, others: Sequence[str]) -> str:
    """What the trace says of the launch calls' cost, beyond cuDNN's and flash's: for each launch
    call flash makes, what the same call costs each other backend of `split` (columns
    ``<name> µs``). The call's name sets no price when the same call costs another backend a
    different time; where no other backend makes the call the trace cannot tell the two apart."""
    said = []
    for label in split.index:
        if not label.startswith("launch: ") or split.loc[label, "flash µs"] <= 0:
            continue
        call, mine = label.split(": ", 1)[1], float(split.loc[label, "flash µs"])
        for other in others:
            theirs = float(split.loc[label, f"{other} µs"])
            if theirs <= 0:
                continue
            if abs(theirs - mine) > 0.25 * mine:
                said.append(f"the same {call} takes {theirs:.1f} µs in {other}'s forward against "
                            f"{mine:.1f} µs in flash's, so the launch API does not set the cost by itself")
            else:
                said.append(f"the same {call} takes {theirs:.1f} µs in {other}'s forward too, close to "
                            f"flash's {mine:.1f} µs")
    if not said:
        return ("no other backend here launches through the same call, so the trace cannot say whether "
                "the API or the call's circumstances set its cost")
    return "; ".join(said)


def glue_cpu_split(cudnn: Profile, flash: Profile, prefix: str = "cpu_split",
                   others: Mapping[str, Profile] | None = None) -> dict:
    """Glue what chapter 6 says about the CPU split (`cpu_time_split`'s rows) as `<prefix>_<name>`:
    the gap and its largest rows, the launch calls (and, with `others`, what the same calls cost
    the other backends), the backend's own op and the transposes."""
    from ..views.prose import glue
    others = {k: v for k, v in (others or {}).items() if v is not None and v is not cudnn and v is not flash}
    split = _cpu_split({"cudnn": cudnn, "flash": flash, **others})
    row = lambda label, who: float(split.loc[label, f"{who} µs"]) if label in split.index else 0.0  # noqa: E731
    launches = lambda who: " and ".join(  # noqa: E731
        f"{i.split(': ')[1]} ({split.loc[i, f'{who} µs']:.1f} µs)" for i in split.index
        if i.startswith("launch: ") and split.loc[i, f"{who} µs"] > 0) or "no launch"
    heavier = float(split.loc["total: attn_fwd", "flash µs"]) >= float(split.loc["total: attn_fwd", "cudnn µs"])
    op = {who: row("the backend's forward op", who) for who in ("cudnn", "flash")}
    values = {"gap": cpu_difference(cudnn, flash) if heavier else cpu_difference(flash, cudnn),
              "plan": ("no sign of a plan prepared on every call: cuDNN's op takes no longer than flash's"
                       if op["cudnn"] <= op["flash"] else
                       "cuDNN's own op is the heavier one, where its engine prepares the plan"),
              "cudnn_launch": launches("cudnn"), "flash_launch": launches("flash"),
              "launch_note": launch_note(split, list(others)),
              "cudnn_op_us": f"{op['cudnn']:.1f}", "flash_op_us": f"{op['flash']:.1f}",
              "flash_transposes_us": f"{row('transposes (views)', 'flash'):.1f}",
              "cudnn_transposes_us": f"{row('transposes (views)', 'cudnn'):.1f}"}
    for key, value in values.items():
        glue(f"{prefix}_{key}", value)
    return values


def fastest_backend(profiles: Profiles) -> Verdict:
    """The article: flash is the fastest backend (on its A100, 146.8 µs against cuDNN's 186.3)."""
    times = {n: p.summary()["gpu_time_us"] for n, p in profiles.items()}
    fastest = min(times, key=times.get)
    evidence = ", ".join(f"{n} {t:.1f} µs" for n, t in sorted(times.items(), key=lambda kv: kv[1]))
    article = ", ".join(f"{n} {A100_REFERENCE[n]['GPU µs']:.1f} µs" for n in sorted(
        (n for n in profiles if n in A100_REFERENCE), key=lambda n: A100_REFERENCE[n]["GPU µs"]))
    return Verdict("flash is the fastest backend", evidence, fastest == "sdpa_flash", f"{fastest} is the fastest",
                   article=article)


def chosen_backends(profiles: Profiles, auto: Profile) -> list[str]:
    """The pinned stages whose kernels are the ones SDPA ran with no backend pinned."""
    ran = set(auto.kernels()["library"]) - {"CUDA runtime"}
    return [n for n, p in profiles.items() if set(p.kernels()["library"]) - {"CUDA runtime"} == ran]


def auto_picks_fastest(profiles: Profiles, auto: Profile) -> Verdict:
    """The article: SDPA "dispatches to one of the several backends and picks the fastest one that
    supports our inputs". Judged by which pinned stage's kernels the unpinned call ran."""
    times = {n: p.summary()["gpu_time_us"] for n, p in profiles.items()}
    fastest = min(times, key=times.get)
    chosen = chosen_backends(profiles, auto)
    evidence = (f"with no backend pinned SDPA ran {', '.join(chosen) or 'another kernel'}; the fastest pinned "
                f"backend is {fastest} ({times[fastest]:.1f} µs)")
    return Verdict("with no backend pinned, SDPA picks the fastest backend", evidence, chosen == [fastest],
                   f"SDPA chose {', '.join(chosen) or 'another kernel'}, not {fastest}")


# --- three claims of the article, each a number: a ratio, CPU time, memory --------------------

def math_slower_than_inplace(math: Profile, inplace: Profile) -> Verdict:
    """The article: "the one liner is 3.7x slower", math against the in-place three lines
    (7.239 ms against 1.955 ms of GPU time per forward on its A100)."""
    m, n = math.summary(), inplace.summary()
    ratio = m["gpu_time_us"] / n["gpu_time_us"]
    evidence = (f"GPU time per forward: {math.stage} {m['gpu_time_us']:.1f} µs, {inplace.stage} "
                f"{n['gpu_time_us']:.1f} µs: {ratio:.2f}×")
    (cm, cn), by = later_calls(m, n)   # per call, both timed alike: the caller's loop, else do_bench
    if cm and cn:
        evidence += f" ({by}: {cm / cn:.2f}×)"
    a100_math = A100_REFERENCE["sdpa_math"]["GPU µs"] / 1000
    a100_inplace = A100_REFERENCE["inplace"]["GPU µs"] / 1000
    return Verdict("the math backend is slower than the in-place three lines", evidence, ratio > 1,
                   f"math takes {ratio:.2f}× in-place's GPU time: it is faster",
                   article=f"{A100_MATH_OVER_INPLACE}× slower ({a100_math:.3f} / {a100_inplace:.3f} ms)")


def math_unlike_naive(math: Profile, naive: Profile) -> Verdict:
    """Not the naive code in one call: the math backend's forward runs other kernels, and more.
    Holds when it has more GPU events than naive and none of its matmul kernels is one of naive's."""
    em, en = _events(math), _events(naive)
    def kinds(e: pd.DataFrame) -> str:
        counts = e["kind"].value_counts()
        return ", ".join(f"{n} {k}" for k, n in counts.items())
    def gemm_math(e: pd.DataFrame) -> str:
        g = e[e["kind"] == "gemm"]
        return " and ".join(sorted({f"{d} on {m}" for d, m in zip(g["dtype"], g["math"])})) or "no gemm"
    shared = sorted(set(em.loc[em["category"] == "kernel", "name"]) & set(en.loc[en["category"] == "kernel", "name"]))
    same_gemms = set(em.loc[em["kind"] == "gemm", "name"]) & set(en.loc[en["kind"] == "gemm", "name"])
    evidence = (f"{math.stage}: {len(em)} GPU events ({kinds(em)}); {naive.stage}: {len(en)} ({kinds(en)}). "
                f"Matmuls: {math.stage} {gemm_math(em)}, {naive.stage} {gemm_math(en)}. "
                f"{len(shared)} of {math.stage}'s kernel names also appear in {naive.stage}'s forward")
    holds = len(em) > len(en) and not same_gemms
    why = (f"{len(em)} GPU events, not more than {naive.stage}'s {len(en)}" if len(em) <= len(en)
           else f"it runs {len(same_gemms)} of {naive.stage}'s matmul kernels")
    return Verdict("the math backend runs other kernels than the naive code, and more of them", evidence, holds, why)


def cudnn_cpu_heavier(cudnn: Profile, others: list[Profile]) -> Verdict:
    """The article: cuDNN spends more CPU per forward than flash and efficient (214 µs against
    138 µs and 117 µs on its A100)."""
    cpu = {p.stage: p.summary()["cpu_time_us"] for p in [cudnn, *others]}
    lighter = [s for s in cpu if s != cudnn.stage and cpu[s] >= cpu[cudnn.stage]]
    evidence = "CPU time in attn_fwd per forward: " + ", ".join(f"{s} {t:.1f} µs" for s, t in cpu.items())
    article = ", ".join(f"{s} {A100_REFERENCE[s]['CPU µs']:.0f} µs" for s in cpu if s in A100_REFERENCE)
    return Verdict(f"cuDNN spends more CPU time per forward than {' and '.join(p.stage for p in others)}",
                   evidence, not lighter,
                   f"{cudnn.stage} spends less CPU per forward than {' and '.join(lighter)}", article=article)


def forward_memory_bytes(prof: Profile) -> int | None:
    """What one forward allocated beyond what it started with (see Profile.forward_memory_bytes)."""
    return prof.forward_memory_bytes


def output_bytes(prof: Profile) -> int:
    """Bytes of one [batch, heads, seq, head_dim] output in the stage's dtype."""
    s = prof.shape
    return s.batch * s.heads * s.seq * s.head_dim * s.element_size


def last_line_bytes(prof: Profile) -> int:
    """What the three lines hold at once on their last, `torch.softmax(scores, -1) @ v`: the scores
    (still named), softmax's output and the result. Nowhere else do two score matrices meet an
    output: on the first line the matmul's result and the scaled copy are two score matrices and no
    output, and out of place masked_fill's copy sits beside only the scores it copies (the old
    tensor is freed as the name is rebound)."""
    return 2 * scores_bytes(prof) + output_bytes(prof)


def inplace_saves_memory(inplace: Profile, naive: Profile) -> Verdict | None:
    """The article: in-place masking saves memory as well as time. None where a trace does not
    record its forward's memory (traces recorded before the provenance had it). The evidence says
    where the peak is: the last line's two score matrices and output (`last_line_bytes`), in place
    or not, which masked_fill's copy never exceeds."""
    now, was = forward_memory_bytes(inplace), forward_memory_bytes(naive)
    if now is None or was is None:
        return None
    saved = was - now
    matrix = scores_bytes(inplace)
    mib = lambda b: f"{b / 2**20:,.0f} MiB"  # noqa: E731
    evidence = (f"peak memory of one forward beyond what it started with: {inplace.stage} {mib(now)}, "
                f"{naive.stage} {mib(was)} ({now / matrix:.2f} and {was / matrix:.2f} score matrices of "
                f"{mib(matrix)}): {mib(saved)} saved")
    line = last_line_bytes(inplace)
    at_last = [p.stage for p, used in ((inplace, now), (naive, was)) if used == last_line_bytes(p)]
    if at_last:
        evidence += (f". {' and '.join(at_last)}: exactly the last line's scores, softmax's output and the result "
                     f"(2 × {mib(matrix)} + {mib(output_bytes(inplace))} = {mib(line)}): the peak is there, and "
                     f"masked_fill's copy, beside one score matrix only, stays under it")
    difference = (f"the same peak, {mib(now)}, in place or not" if saved == 0 else
                  f"{inplace.stage} needs {mib(-saved)} more than {naive.stage}")
    if saved == 0 and len(at_last) == 2:
        difference += ": it is set by the last line, not by the copy"
    return Verdict("in-place masking saves memory as well as time", evidence, saved > 0, difference)


def glue_memory(inplace: Profile, naive: Profile, prefix: str = "memory") -> dict:
    """Glue chapter 2's account of the forward's peak (`last_line_bytes`) as `<prefix>_<name>`."""
    from ..views.prose import glue
    mib = lambda b: f"{b / 2**20:,.0f}"  # noqa: E731
    used = {p.stage: forward_memory_bytes(p) for p in (inplace, naive)}
    line = last_line_bytes(inplace)
    if any(u is None for u in used.values()):
        match = "a peak these recordings do not hold"
    elif all(u == line for u in used.values()):
        match = "exactly the peak measured, in place and out of place"
    else:
        match = "not the peak measured (" + ", ".join(f"{s} {mib(u)} MiB" for s, u in used.items()) + ")"
    values = {"scores_mib": mib(scores_bytes(inplace)), "output_mib": mib(output_bytes(inplace)),
              "last_line_mib": mib(line), "match": match}
    for key, value in values.items():
        glue(f"{prefix}_{key}", value)
    return values


# --- each stage's verdicts: one registered function per stage (views.verdicts.verdict), here for
# the article's stages and in their own chapter's module for the others (compiled, flex, hub_flash)

@verdict("naive")
def naive_verdicts(naive: Profile) -> list[Verdict]:
    return [hidden_memcpy(naive), gemms_on_tensor_cores(naive), launch_path_of_gemms(naive)]


@verdict("inplace", needs=("naive",))
def inplace_verdicts(inplace: Profile, naive: Profile) -> list[Verdict | None]:
    return [memcpy_gone(inplace, naive), fewer_masking_ops(inplace, naive), inplace_saves_memory(inplace, naive)]


@verdict("sdpa_math", needs=("naive", "inplace"))
def math_verdicts(math: Profile, naive: Profile, inplace: Profile) -> list[Verdict]:
    return [many_kernels(math), math_fp32_gemms(math), mask_rebuilt(math), safe_softmax(math),
            math_unlike_naive(math, naive), math_slower_than_inplace(math, inplace)]


@verdict("sdpa_efficient")
def efficient_verdicts(efficient: Profile) -> list[Verdict]:
    return [single_kernel(efficient, "CUTLASS (xformers mem-efficient)")]


@verdict("sdpa_flash")
def flash_verdicts(flash: Profile) -> list[Verdict]:
    return [single_kernel(flash, "FlashAttention-2")]


@verdict("sdpa_cudnn", needs=("sdpa_flash", "sdpa_efficient"), optional=("sdpa_auto",))
def cudnn_verdicts(cudnn: Profile, flash: Profile, efficient: Profile,
                   sdpa_auto: Profile | None = None) -> list[Verdict]:
    fused = {p.stage: p for p in (efficient, flash, cudnn)}   # the pinned fused backends, by name
    return ([single_kernel(cudnn, "cuDNN"), no_transposes(cudnn, [flash, efficient]), launched_by_ex(cudnn),
             cudnn_cpu_heavier(cudnn, [flash, efficient]), fastest_backend(fused)]
            + ([auto_picks_fastest(fused, sdpa_auto)] if sdpa_auto is not None else []))


def verdicts(stage: str, profiles: Profiles) -> list[Verdict]:
    """The verdicts on `stage`'s claims (a claim its trace cannot judge is left out)."""
    return VERDICTS[stage](profiles)

# --- beyond the article: torch.compile, FlexAttention and the Hub's kernel register theirs in
# their pages' own modules; imported here so that the registry holds every stage's verdicts
from . import compiled, flex, hub_flash  # noqa: E402,F401


def check(stage: str, profiles: Profiles) -> pd.DataFrame:
    """The article's claims about `stage`, each with this trace's evidence and a verdict."""
    return table(verdicts(stage, profiles))


def revealed(profiles: Profiles) -> dict[str, list[Verdict]]:
    """Every verdict of every stage that `profiles` can judge (it holds the stage and the stages its
    verdicts need), in the registry's order, for the closing table."""
    return {stage: VERDICTS[stage](profiles) for stage in STAGES
            if stage in VERDICTS and VERDICTS[stage].ready(profiles)}

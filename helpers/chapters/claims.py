"""What the article teaches, checked on the reader's GPU: each claim computed from the trace,
with a verdict, "holds" or "differs: ...", for whatever GPU the trace comes from."""
from __future__ import annotations

from typing import Callable, Mapping

import pandas as pd

from ..core.profile import Profile
from ..core.article import A100_MATH_OVER_NAIVE, A100_REFERENCE
from .hub_flash import verdict_list as hub_verdicts
from ..views.verdicts import Verdict, table

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
    n = len(_events(prof))
    ref = f"; {fused.stage} launches {len(_events(fused))}" if fused is not None else ""
    return Verdict("the math backend launches many small kernels", f"{n} GPU events per forward{ref}", n >= 10,
                   f"only {n} GPU events")


def math_fp32_gemms(prof: Profile) -> Verdict:
    e = _events(prof)
    gemms = e[e["kind"] == "gemm"]
    fp32 = gemms["math"].eq("CUDA cores (FFMA)") & gemms["dtype"].eq("fp32")
    evidence = "; ".join(f"{n} → {d}, {m}" for n, d, m in zip(gemms["name"], gemms["dtype"], gemms["math"]))
    copies = e[(e["kind"] == "copy")]
    evidence += f"; {len(copies)} copy kernels convert the inputs and output"
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
    return frame


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


def cpu_time_split(profiles: Profiles) -> pd.DataFrame:
    """Where each backend's CPU time goes: the SDPA op, its backend op, the launching op."""
    rows = []
    for name, prof in profiles.items():
        ops = prof.cpu_ops()
        root = ops[ops["depth"] == 0].iloc[0]
        by_depth = {d: ops[ops["depth"] == d] for d in (1, 2, 3)}
        row = {"stage": name, "attn_fwd µs": round(root["dur_us"], 1)}
        for d, frame in by_depth.items():
            if len(frame):
                top = frame.sort_values("dur_us").iloc[-1]
                row[f"depth {d} op"] = top["name"]
                row[f"depth {d} self µs"] = round(top["self_us"], 1)
        rows.append(row)
    return pd.DataFrame(rows).set_index("stage")


def fastest_backend(profiles: Profiles, auto: Profile | None = None) -> Verdict:
    times = {n: p.summary()["gpu_time_us"] for n, p in profiles.items()}
    fastest = min(times, key=times.get)
    evidence = ", ".join(f"{n} {t:.1f} µs" for n, t in sorted(times.items(), key=lambda kv: kv[1]))
    claim = "flash is the fastest backend, and cuDNN is not SDPA's automatic choice"
    if auto is not None:
        auto_kernels = set(auto.kernels()["library"]) - {"CUDA runtime"}
        chosen = [n for n, p in profiles.items() if set(p.kernels()["library"]) - {"CUDA runtime"} == auto_kernels]
        evidence += f"; with no backend pinned SDPA ran {', '.join(chosen) or 'another kernel'}"
        holds = fastest == "sdpa_flash" and "sdpa_cudnn" not in chosen
        return Verdict(claim, evidence, holds, f"{fastest} is the fastest" +
                       (f" and SDPA chooses {', '.join(chosen)}" if chosen else ""))
    return Verdict(claim, evidence, fastest == "sdpa_flash", f"{fastest} is the fastest")


# --- three claims of the article, each a number: a ratio, CPU time, memory --------------------

def math_slower_than_naive(math: Profile, naive: Profile) -> Verdict:
    """The article: the math backend is 3.7× slower than the naive three lines (its A100)."""
    m, n = math.summary(), naive.summary()
    ratio = m["gpu_time_us"] / n["gpu_time_us"]
    evidence = (f"GPU time per forward: {math.stage} {m['gpu_time_us']:.1f} µs, {naive.stage} "
                f"{n['gpu_time_us']:.1f} µs: {ratio:.2f}×")
    if m["do_bench_us"] and n["do_bench_us"]:
        evidence += f" (do_bench: {m['do_bench_us'] / n['do_bench_us']:.2f}×)"
    return Verdict("the math backend is slower than naive attention", evidence, ratio > 1,
                   f"math takes {ratio:.2f}× naive's GPU time: it is faster",
                   article=f"{A100_MATH_OVER_NAIVE}× slower")


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


def inplace_saves_memory(inplace: Profile, naive: Profile) -> Verdict | None:
    """The article: in-place masking saves memory as well as time. None where a trace does not
    record its forward's memory (traces recorded before the provenance had it)."""
    now, was = forward_memory_bytes(inplace), forward_memory_bytes(naive)
    if now is None or was is None:
        return None
    saved = was - now
    matrix = scores_bytes(inplace)
    mib = lambda b: f"{b / 2**20:,.0f} MiB"  # noqa: E731
    evidence = (f"peak memory of one forward beyond what it started with: {inplace.stage} {mib(now)}, "
                f"{naive.stage} {mib(was)} ({now / matrix:.2f} and {was / matrix:.2f} score matrices of "
                f"{mib(matrix)}): {mib(saved)} saved")
    difference = (f"the same peak, {mib(now)}, in place or not" if saved == 0 else
                  f"{inplace.stage} needs {mib(-saved)} more than {naive.stage}")
    return Verdict("in-place masking saves memory as well as time", evidence, saved > 0, difference)


CHECKS: dict[str, Callable[[Profiles], list[Verdict]]] = {
    "naive": lambda p: [hidden_memcpy(p["naive"]), gemms_on_tensor_cores(p["naive"]),
                        launch_path_of_gemms(p["naive"])],
    "inplace": lambda p: [memcpy_gone(p["inplace"], p["naive"]), fewer_masking_ops(p["inplace"], p["naive"]),
                          inplace_saves_memory(p["inplace"], p["naive"])],
    "sdpa_math": lambda p: [many_kernels(p["sdpa_math"]), math_fp32_gemms(p["sdpa_math"]),
                            mask_rebuilt(p["sdpa_math"]), safe_softmax(p["sdpa_math"]),
                            math_slower_than_naive(p["sdpa_math"], p["naive"])],
    "sdpa_efficient": lambda p: [single_kernel(p["sdpa_efficient"], "CUTLASS (xformers mem-efficient)")],
    "sdpa_flash": lambda p: [single_kernel(p["sdpa_flash"], "FlashAttention-2")],
    "sdpa_cudnn": lambda p: [single_kernel(p["sdpa_cudnn"], "cuDNN"),
                             no_transposes(p["sdpa_cudnn"], [p["sdpa_flash"], p["sdpa_efficient"]]),
                             launched_by_ex(p["sdpa_cudnn"]),
                             cudnn_cpu_heavier(p["sdpa_cudnn"], [p["sdpa_flash"], p["sdpa_efficient"]]),
                             fastest_backend({k: p[k] for k in ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn")},
                                             p.get("sdpa_auto"))],
    "hub_flash": lambda p: hub_verdicts(p["hub_flash"], p["sdpa_flash"]),
}
NEEDS = {"inplace": ("naive",), "sdpa_math": ("naive",), "sdpa_cudnn": ("sdpa_flash", "sdpa_efficient"),
         "hub_flash": ("sdpa_flash",)}


def verdicts(stage: str, profiles: Profiles) -> list[Verdict]:
    """The verdicts on `stage`'s claims (a claim its trace cannot judge is left out)."""
    return [v for v in CHECKS[stage](profiles) if v is not None]

# --- beyond the article: torch.compile and FlexAttention (their pages' own modules) -------------
from .compiled import verdict_list as compiled_verdicts  # noqa: E402
from .flex import sliding_verdict_list as sliding_verdicts, verdict_list as flex_verdicts  # noqa: E402

CHECKS |= {
    "naive_compiled": lambda p: compiled_verdicts(p["naive_compiled"], p["naive"]),
    "flex": lambda p: flex_verdicts(p["flex"], p["sdpa_flash"]),
    "flex_sliding": lambda p: sliding_verdicts(p["flex_sliding"], p["flex"]),
}
NEEDS |= {"naive_compiled": ("naive",), "flex": ("sdpa_flash",), "flex_sliding": ("flex",)}


def check(stage: str, profiles: Profiles) -> pd.DataFrame:
    """The article's claims about `stage`, each with this trace's evidence and a verdict."""
    return table(verdicts(stage, profiles))


def revealed(profiles: Profiles) -> dict[str, list[Verdict]]:
    """Every verdict of every stage that `profiles` can judge, for the closing table."""
    return {stage: verdicts(stage, profiles) for stage in CHECKS
            if stage in profiles and all(n in profiles for n in NEEDS.get(stage, ()))}

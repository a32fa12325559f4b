"""The bug zoo: realistic one-line bugs, each stored as data.

Each bug names a file, a snippet that occurs exactly once in it (the anchor: no line numbers, so
the zoo survives refactors; a bug whose snippet is gone reports "does not apply"), the text that
replaces it, its class, what a reader would be shown, and the test files most likely to catch it
(the runner's --targeted mode runs those first).

Classes (issue 28): swap (arguments swapped where a verdict is wired to its profiles), unit (a unit
changed in one column only), ratio (a ratio inverted), sort (a sort reversed), minmax (min/max or
first/last swapped), sentence (two numbers swapped in an answer sentence), js (a change that only
the in-browser judge or the calculator shows: since the judge's units and status words moved into
Python's helpers/views/guess.py, which hands them to guess.js in every key, two of these are planted
there), column (the wrong column read), compare (a comparison turned round), stat (the wrong
statistic).

Re-anchored 2026-12-05 (their code had moved; same slip, same reader-visible effect): claims-math-
naive-swapped (math is now judged against in-place), claims-fastest-max, claims-cpu-split-first (the
split now charges each CUDA call to the innermost op), counters-gflop-mflop (the work table),
roofline-ridge-inverted (the ridge from the ncu calibration matmul), roofline-roof-side, the three
training-* (renamed columns), guessjs-micro-sign and guessjs-status-words (guess.py's UNITS and
STATUSES), occ-tflops-ms (the ledger's model TFLOP/s). The same day the verdict registry
(views.verdicts.verdict) replaced claims.CHECKS, and the six wiring bugs moved with it: inplace-memcpy,
masking-ops, memory and math-naive swap the arguments inside the registered inplace_verdicts /
math_verdicts of claims.py; flex-swapped and compiled-swapped swap the registered judge's
parameters in flex.py and compiled.py (the registry hands the stage first, then its `needs`).
"""

ZOO_T = ["tests/test_zoo_guards.py"]  # the guards written to kill this zoo's survivors (run first)
CLAIMS_T = ZOO_T + ["tests/test_claims_raw.py", "tests/test_page_verdicts_raw.py", "tests/test_page_verdicts_text.py"]
COUNTERS_T = ZOO_T + ["tests/test_hardware_views.py", "tests/test_ncu.py"]
OWN_T = ZOO_T + ["tests/test_own_traces.py", "tests/test_bound.py"]
TRAIN_T = ZOO_T + ["tests/test_training.py"]
GUESS_T = ZOO_T + ["tests/test_guess_js.py"]
CALC_T = ZOO_T + ["tests/test_calculator_js.py", "tests/test_occupancy.py"]
OCC_T = ZOO_T + ["tests/test_occupancy_views.py", "tests/test_hardware_views.py", "tests/test_lessons.py"]
CF_T = ZOO_T + ["tests/test_compiled_flex.py", "tests/test_page_verdicts_raw.py"]
# the caller's timer (issue 38): the independent recomputation from timers.json, and the rule's own tests
TIMER_T = ["tests/independent/test_timer_verdicts.py", "tests/test_bound.py"]

# the lists of the twelve bugs re-anchored on 2026-12-05 (their code moved): the guards, the
# suite's files on that figure, and tests/independent/ (plain recomputations from the recordings)
IND = "tests/independent/"
CLAIMS_S_T = CLAIMS_T + [IND + "test_stage_pages.py", IND + "test_at_a_glance_page.py"]
COUNTERS_S_T = COUNTERS_T + [IND + "test_counters_page.py", IND + "test_ch09_raw.py", "tests/test_ledger_book.py"]
ROOF_S_T = COUNTERS_T + [IND + "test_ch09_raw.py", "tests/test_quantities.py"]
TRAIN_S_T = TRAIN_T + [IND + "test_ch11_raw.py"]
GUESS_S_T = GUESS_T + ["tests/test_guess_words.py", "tests/test_guess_keys_raw.py"]
OCC_S_T = OCC_T + [IND + "test_occupancy_page.py"]

C = "helpers/chapters/claims.py"
K = "helpers/counters/chapter.py"
R = "helpers/chapters/roofline.py"
O = "helpers/own_model/chapter.py"
VB = "helpers/breakdown/views.py"
CB = "helpers/breakdown/core.py"
T = "helpers/training/chapter.py"
G = "helpers/views/js/guess.js"
GP = "helpers/views/guess.py"  # the judge's tables (units, status words), handed to guess.js in every key
OJ = "helpers/occupancy/js/occupancy.js"
OL = "helpers/chapters/occupancy_lessons.py"
OT = "helpers/chapters/occupancy_truth.py"
CO = "helpers/chapters/compiled.py"
BD = "helpers/core/bound.py"
FL = "helpers/chapters/flex.py"
HF = "helpers/chapters/hub_flash.py"
A = "helpers/core/article.py"
NV = "helpers/core/names/cublas.py"
FA = "helpers/core/names/flash.py"
AT = "helpers/core/names/aten.py"
VC = "helpers/views/charts.py"
# issue 38: the three kinds that survived the independent layer (a chart's axis values, an article
# figure quoted in a verdict, a decoded kernel name); their own independent file runs first (it is
# the one meant to catch them, and fail-fast stops there), then the guards
CHART_T = [IND + "test_charts_raw.py"] + ZOO_T
ARTICLE_T = [IND + "test_article_quotes.py"] + ZOO_T
NAMES_T = [IND + "test_decoded_names_raw.py"] + ZOO_T

BUGS = [
    # --- claims: every chapter's verdicts (02, 03, 06, 06b, 06c) ---------------------------------
    dict(id="claims-inplace-memcpy-swapped", file=C, cls="swap", chapter="02",
         find='memcpy_gone(inplace, naive)', replace='memcpy_gone(naive, inplace)',
         shows="02's verdict 'the Memcpy is gone' judged on naive against inplace: 'differs'", tests=CLAIMS_T),
    dict(id="claims-masking-ops-swapped", file=C, cls="swap", chapter="02",
         find='fewer_masking_ops(inplace, naive)', replace='fewer_masking_ops(naive, inplace)',
         shows="02's 'fewer CPU ops in the masking step' counts the wrong roots", tests=CLAIMS_T),
    dict(id="claims-memory-swapped", file=C, cls="swap", chapter="02",
         find='inplace_saves_memory(inplace, naive)]', replace='inplace_saves_memory(naive, inplace)]',
         shows="02: 'naive needs N MiB more than inplace', the verdict turned round", tests=CLAIMS_T),
    dict(id="claims-math-naive-swapped", file=C, cls="swap", chapter="03",
         find='math_slower_than_inplace(math, inplace)', replace='math_slower_than_inplace(inplace, math)',
         shows="03: the math/in-place ratio shown inverted and the verdict flipped (the registered math_verdicts)",
         tests=CLAIMS_S_T),
    dict(id="claims-math-ratio-inverted", file=C, cls="ratio", chapter="03",
         find='ratio = m["gpu_time_us"] / n["gpu_time_us"]', replace='ratio = n["gpu_time_us"] / m["gpu_time_us"]',
         shows="03: 'sdpa_math … 0.27×' where math is 3.7× naive", tests=CLAIMS_T),
    dict(id="claims-fastest-max", file=C, cls="minmax", chapter="06",
         find='fastest = min(times, key=times.get)\n    evidence = ", ".join(',
         replace='fastest = max(times, key=times.get)\n    evidence = ", ".join(',
         shows="06: the slowest backend named the fastest (fastest_backend; auto_picks_fastest keeps its own min)",
         tests=CLAIMS_S_T),
    dict(id="claims-fastest-sort-reversed", file=C, cls="sort", chapter="06",
         find="sorted(times.items(), key=lambda kv: kv[1])", replace="sorted(times.items(), key=lambda kv: kv[1], reverse=True)",
         shows="06: the evidence lists the backends slowest first", tests=CLAIMS_T),
    dict(id="claims-cudnn-cpu-ms", file=C, cls="unit", chapter="06",
         find='", ".join(f"{s} {t:.1f} µs" for s, t in cpu.items())', replace='", ".join(f"{s} {t / 1e3:.1f} µs" for s, t in cpu.items())',
         shows="06: cuDNN's CPU time printed in ms under a µs label", tests=CLAIMS_T),
    dict(id="claims-memory-mib-as-mb", file=C, cls="unit", chapter="02",
         find='mib = lambda b: f"{b / 2**20:,.0f} MiB"', replace='mib = lambda b: f"{b / 1e6:,.0f} MiB"',
         shows="02: the memory evidence in MB labelled MiB", tests=CLAIMS_T),
    dict(id="claims-hbm-total-mib", file=C, cls="unit", chapter="05",
         find='frame["total MB"] = ((frame["score bytes"] + frame["q, k, v, out bytes"]) / 1e6).round(1)',
         replace='frame["total MB"] = ((frame["score bytes"] + frame["q, k, v, out bytes"]) / 2**20).round(1)',
         shows="05: the HBM model's 'total MB' in MiB", tests=CLAIMS_T + COUNTERS_T[1:]),
    dict(id="claims-cpu-split-first", file=C, cls="minmax", chapter="06",
         find='own[holders["depth"].idxmax()] -= dur', replace='own[holders["depth"].idxmin()] -= dur',
         shows="06: the CPU split charges each CUDA call to the outermost op (attn_fwd's own), not the innermost that made it",
         tests=CLAIMS_S_T),
    dict(id="claims-flex-swapped", file=FL, cls="swap", chapter="06c",
         find='def verdict_list(flex: Profile, flash: Profile)', replace='def verdict_list(flash: Profile, flex: Profile)',
         shows="the closing table's flex verdicts judged on flash (the registered judge's parameters in the wrong order)",
         tests=CLAIMS_T + CF_T[1:]),
    dict(id="claims-compiled-swapped", file=CO, cls="swap", chapter="06b",
         find='def verdict_list(compiled: Profile, naive: Profile)', replace='def verdict_list(naive: Profile, compiled: Profile)',
         shows="the closing table's torch.compile verdicts judged on naive (the registered judge's parameters in the wrong order)",
         tests=CLAIMS_T + CF_T[1:]),
    # --- counters (05, 07, 09) ---------------------------------------------------------------------
    dict(id="counters-read-mb-column", file=K, cls="column", chapter="05",
         find='"read MB": t["dram_read_bytes"].sum() / MB', replace='"read MB": t["dram_write_bytes"].sum() / MB',
         shows="05: the HBM table's 'read MB' shows the bytes written", tests=COUNTERS_T),
    dict(id="counters-forward-over-model-inverted", file=K, cls="ratio", chapter="05",
         find='out["forward / model"] = out["forward MB"] / out["model MB"]',
         replace='out["forward / model"] = out["model MB"] / out["forward MB"]',
         shows="05: 'forward / model' inverted", tests=COUNTERS_T),
    dict(id="counters-hbm-ratio-inverted", file=K, cls="ratio", chapter="05",
         find='"ratio": f"{m[unfused] / m[fused]:.0f}"', replace='"ratio": f"{m[fused] / m[unfused]:.0f}"',
         shows="05: 'naive moves 0× the bytes of flash'", tests=COUNTERS_T),
    dict(id="counters-min-over-model-max", file=K, cls="minmax", chapter="05",
         find="\"min_over_model\": f\"{table['forward / model'].min():.2f}\"",
         replace="\"min_over_model\": f\"{table['forward / model'].max():.2f}\"",
         shows="05: 'between X and X times the model' (the minimum shown as the maximum)", tests=COUNTERS_T),
    dict(id="counters-gflop-mflop", file=K, cls="unit", chapter="09",
         find='"executed GFLOP": round(flops / 1e9, 2)', replace='"executed GFLOP": round(flops / 1e6, 2)',
         shows="05/09: the work table's executed FLOPs in MFLOP under a GFLOP label", tests=COUNTERS_S_T),
    # --- roofline (09) -------------------------------------------------------------------------------
    dict(id="roofline-dram-mib", file=R, cls="unit", chapter="09",
         find='"GFLOP": flops / 1e9, "DRAM MB": moved / 1e6', replace='"GFLOP": flops / 1e9, "DRAM MB": moved / 2**20',
         shows="09: the roofline table's DRAM MB in MiB", tests=COUNTERS_T),
    dict(id="roofline-ncu-ms", file=R, cls="unit", chapter="09",
         find='"ncu µs": seconds * 1e6,\n            "FLOP/B"', replace='"ncu µs": seconds * 1e3,\n            "FLOP/B"',
         shows="09: the per-stage 'ncu µs' in ms", tests=COUNTERS_T),
    dict(id="roofline-kernel-ns", file=R, cls="unit", chapter="09",
         find='"ncu µs": seconds * 1e6, "FLOP/B": intensity,', replace='"ncu µs": seconds * 1e9, "FLOP/B": intensity,',
         shows="09: a per-kernel row reading '85,216 µs' (ns labelled µs)", tests=COUNTERS_T),
    dict(id="roofline-copy-seconds", file=R, cls="unit", chapter="09",
         find='float(row["copy µs"].iloc[0]) / 1e6', replace='float(row["copy µs"].iloc[0]) / 1e3',
         shows="09: naive's Memcpy time counted in ms as seconds: its TFLOP/s collapses", tests=COUNTERS_T),
    dict(id="roofline-closest-min", file=R, cls="minmax", chapter="09",
         find='closest = pts.loc[pts["% of roof"].idxmax()]', replace='closest = pts.loc[pts["% of roof"].idxmin()]',
         shows="09: 'closest to its roof' names the farthest stage", tests=COUNTERS_T),
    dict(id="roofline-ridge-inverted", file=R, cls="ratio", chapter="09",
         find='"ridge FLOP/B": q.ridge(matmul, copy)', replace='"ridge FLOP/B": q.ridge(copy, matmul)',
         shows="09: the ridge point at 0.003 FLOP/B (copy roof over the calibration matmul's)", tests=ROOF_S_T),
    dict(id="roofline-direction-first-last", file=R, cls="minmax", chapter="09",
         find='first, last = rows["FLOP/B"].iloc[0], rows["FLOP/B"].iloc[-1]',
         replace='first, last = rows["FLOP/B"].iloc[-1], rows["FLOP/B"].iloc[0]',
         shows="09: 'intensity falls as seq grows' where it rises", tests=COUNTERS_T),
    dict(id="roofline-sweep-first-last", file=R, cls="sentence", chapter="09",
         find='f"{key}_ai_first": f"{ai.iloc[0]:.0f}", f"{key}_ai_last": f"{ai.iloc[-1]:.0f}"',
         replace='f"{key}_ai_first": f"{ai.iloc[-1]:.0f}", f"{key}_ai_last": f"{ai.iloc[0]:.0f}"',
         shows="09: 'from X FLOP/B at the shortest seq to Y at the longest', X and Y swapped", tests=COUNTERS_T),
    dict(id="roofline-of-sheet-swapped", file=R, cls="sentence", chapter="09",
         find="\"matmul_of_sheet\": f\"{100 * roof['matmul TFLOP/s'] / sheet['bf16 TFLOP/s']:.0f}\" if sheet else \"—\",\n        \"copy_of_sheet\": f\"{100 * roof['copy TB/s'] / sheet['TB/s']:.0f}\"",
         replace="\"matmul_of_sheet\": f\"{100 * roof['copy TB/s'] / sheet['TB/s']:.0f}\" if sheet else \"—\",\n        \"copy_of_sheet\": f\"{100 * roof['matmul TFLOP/s'] / sheet['bf16 TFLOP/s']:.0f}\"",
         shows="09: the matmul and copy '% of the datasheet' swapped in the sentence", tests=COUNTERS_T),
    dict(id="roofline-roof-side", file=R, cls="compare", chapter="09",
         find='"roof": "memory" if intensity < ridge else "compute"',
         replace='"roof": "memory" if intensity > ridge else "compute"',
         shows="09: stages under the memory roof said to be under the compute roof", tests=ROOF_S_T),
    # --- own model (10) and the breakdown (08, 10) ---------------------------------------------------
    dict(id="own-idle-host-swapped", file=O, cls="sentence", chapter="10",
         find='"idle_pct": round(float(b["idle_pct"]), 1), "host_wait_pct": round(float(b["host_wait_pct"]), 1)',
         replace='"idle_pct": round(float(b["host_wait_pct"]), 1), "host_wait_pct": round(float(b["idle_pct"]), 1)',
         shows="10: 'idle X%, of which Y% waiting for the host' with X and Y swapped", tests=OWN_T),
    dict(id="own-top-op-last", file=O, cls="minmax", chapter="10",
         find='"top_op": per_op.index[0]', replace='"top_op": per_op.index[-1]',
         shows="10: the op that launched the most GPU time names the one that launched the least", tests=OWN_T),
    dict(id="own-median-mean", file=O, cls="stat", chapter="10",
         find='"dur_us"].median()), 1)', replace='"dur_us"].mean()), 1)',
         shows="10: 'the median kernel takes X µs' shows the mean", tests=OWN_T),
    dict(id="own-events-kernels", file=O, cls="column", chapter="10",
         find='loc[prof.forward_step, "gpu_events"])\n', replace='loc[prof.forward_step, "kernels"])\n',
         shows="10: the guess's answer key counts kernels, not GPU events (memcpys left out)", tests=OWN_T),
    dict(id="breakdown-verdict-op-min", file=VB, cls="minmax", chapter="10",
         find="op, wait = by_op.idxmax(), by_op.max()", replace="op, wait = by_op.idxmin(), by_op.min()",
         shows="10: 'the longest share of that wait comes before work launched by' the shortest", tests=OWN_T),
    dict(id="breakdown-host-column", file=VB, cls="column", chapter="08",
         find='"waiting for the host µs": table["host_wait_us"].round(1)',
         replace='"waiting for the host µs": table["other_wait_us"].round(1)',
         shows="the step table's 'waiting for the host µs' shows the other GPU work", tests=OWN_T),
    dict(id="breakdown-top-kernels-ascending", file=VB, cls="sort", chapter="10",
         find='}).sort_values("total µs", ascending=False).head(n)', replace='}).sort_values("total µs", ascending=True).head(n)',
         shows="10: 'top kernels' lists the smallest", tests=OWN_T),
    dict(id="breakdown-pct-fraction", file=VB, cls="unit", chapter="10",
         find='table.insert(3, "% of GPU time", (100 * table["total µs"] / total).round(1))',
         replace='table.insert(3, "% of GPU time", (table["total µs"] / total).round(1))',
         shows="10: '% of GPU time' as a fraction (0.6 for 60%)", tests=OWN_T),
    dict(id="breakdown-per-op-ascending", file=VB, cls="sort", chapter="10",
         find='table = pd.DataFrame(rows).sort_values("GPU µs", ascending=False).set_index("op")',
         replace='table = pd.DataFrame(rows).sort_values("GPU µs", ascending=True).set_index("op")',
         shows="10: kernels per op, the least first (and the top op the least)", tests=OWN_T),
    dict(id="breakdown-chart-host-other", file=VB, cls="column", chapter="08",
         find='parts["host"].append(row.host_wait_pct)', replace='parts["host"].append(row.other_wait_pct)',
         shows="08/10: the breakdown chart's 'waiting for the host' bar shows the other wait", tests=OWN_T),
    dict(id="core-gap-cause-swapped", file=CB, cls="swap", chapter="08",
         find='np.where(launch > gap_start, "host", "gpu")', replace='np.where(launch > gap_start, "gpu", "host")',
         shows="every gap's cause turned round", tests=OWN_T),
    # --- training (11) --------------------------------------------------------------------------------
    dict(id="training-bwd-over-fwd-inverted", file=T, cls="ratio", chapter="11",
         find='round(b["gpu_time_us"] / f["gpu_time_us"], 2)', replace='round(f["gpu_time_us"] / b["gpu_time_us"], 2)',
         shows="11: 'the backward takes 0.4× the forward'", tests=TRAIN_T),
    dict(id="training-fwd-bwd-us-swapped", file=T, cls="sentence", chapter="11",
         find='"forward GPU µs (training step)": round(f["gpu_time_us"], 1),\n                     "backward GPU µs (training step)": round(b["gpu_time_us"], 1),',
         replace='"forward GPU µs (training step)": round(b["gpu_time_us"], 1),\n                     "backward GPU µs (training step)": round(f["gpu_time_us"], 1),',
         shows="11: forward and backward GPU µs swapped in the phases table", tests=TRAIN_S_T),
    dict(id="training-output-mb", file=T, cls="unit", chapter="11",
         find='"output MiB": round(t["output_bytes"] / MIB, 1)', replace='"output MiB": round(t["output_bytes"] / 1e6, 1)',
         shows="11: what autograd keeps: 'output MiB' in MB", tests=TRAIN_T),
    dict(id="training-lse-kib", file=T, cls="unit", chapter="11",
         find='"logsumexp fp32 MiB": round(lse_bytes(shape) / MIB, 2)', replace='"logsumexp fp32 MiB": round(lse_bytes(shape) / 1024, 2)',
         shows="11: the logsumexp in KiB labelled MiB", tests=TRAIN_T),
    dict(id="training-peak-chart-mib", file=T, cls="unit", chapter="11",
         find='fig.add_scatter(x=g["seq"], y=g["peak_bytes"] / GIB,', replace='fig.add_scatter(x=g["seq"], y=g["peak_bytes"] / MIB,',
         shows="11: the peak-memory chart's points in MiB on a GiB axis", tests=TRAIN_T),
    dict(id="training-max-seq-gb", file=T, cls="unit", chapter="11",
         find='t["peak at max GiB"] = (t.pop("peak_at_max_bytes") / GIB).round(2)',
         replace='t["peak at max GiB"] = (t.pop("peak_at_max_bytes") / 1e9).round(2)',
         shows="11: 'peak at max GiB' in GB", tests=TRAIN_T),
    dict(id="training-first-oom-max", file=T, cls="minmax", chapter="11",
         find='first = ms[ms["max_seq"] == ms["max_seq"].min()]', replace='first = ms[ms["max_seq"] == ms["max_seq"].max()]',
         shows="11: 'At seq 32,768 these ran out together: naive_compiled'", tests=TRAIN_T),
    dict(id="training-first-oom-seq-undoubled", file=T, cls="unit", chapter="11",
         find="out[\"first_oom_seq\"] = f\"{int(first['max_seq'].iloc[0]) * 2:,}\"",
         replace="out[\"first_oom_seq\"] = f\"{int(first['max_seq'].iloc[0]):,}\"",
         shows="11: 'ran out at seq N' names the last seq that ran, not the doubling that failed", tests=TRAIN_T),
    dict(id="training-first-oom-model-max", file=T, cls="minmax", chapter="11",
         find='firsts = [str(s) for s in limits.index[limits == limits.min()]]',
         replace='firsts = [str(s) for s in limits.index[limits == limits.max()]]',
         shows="11: the guess's answer 'which stage runs out first' names the last", tests=TRAIN_T),
    dict(id="training-cap-seq-min", file=T, cls="minmax", chapter="11",
         find="values[\"tr_cap_seq\"] = f\"{int(ms['max_seq'].max()):,}\"", replace="values[\"tr_cap_seq\"] = f\"{int(ms['max_seq'].min()):,}\"",
         shows="11: the ladder's cap reads as the smallest largest seq", tests=TRAIN_T),
    dict(id="training-timeline-seconds", file=T, cls="unit", chapter="11",
         find='x = (marks["backward_us"] - marks["forward_us"]) / 1e3', replace='x = (marks["backward_us"] - marks["forward_us"]) / 1e6',
         shows="11: the memory timeline's 'backward' line drawn in s on a ms axis", tests=TRAIN_T),
    dict(id="training-timeline-peak-min", file=T, cls="minmax", chapter="11",
         find='"peak MiB": round(float(t["allocated_bytes"].max()) / MIB, 1)', replace='"peak MiB": round(float(t["allocated_bytes"].min()) / MIB, 1)',
         shows="11: the timeline's 'peak MiB' is the lowest point", tests=TRAIN_T),
    dict(id="training-bwd-ai-inverted", file=T, cls="ratio", chapter="11",
         find='"backward FLOP/byte": round(bf / bb, 1) if bb else None', replace='"backward FLOP/byte": round(bb / bf, 1) if bb else None',
         shows="11: the backward's FLOP/byte inverted (the roofline's x axis runs to 10^-3)", tests=TRAIN_T),
    dict(id="training-bwd-gb-gib", file=T, cls="unit", chapter="11",
         find='"backward GB (ncu)": round(bb / 1e9, 2)', replace='"backward GB (ncu)": round(bb / 2**30, 2)',
         shows="11: backward GB in GiB", tests=TRAIN_T),
    dict(id="training-roofline-fwd-bwd-swapped", file=T, cls="swap", chapter="11",
         find='xs = [d.get("forward FLOP/byte"), d.get("backward FLOP/byte")]',
         replace='xs = [d.get("backward FLOP/byte"), d.get("forward FLOP/byte")]',
         shows="11: the fwd/bwd roofline points swapped in x", tests=TRAIN_T),
    dict(id="training-right-of-ridge", file=T, cls="compare", chapter="11",
         find='fused = w[w["backward FLOP/byte"] > ridge]', replace='fused = w[w["backward FLOP/byte"] < ridge]',
         shows="11: 'right of the ridge' names the stages left of it", tests=TRAIN_S_T),
    dict(id="training-timer-ratio-inverted", file=T, cls="ratio", chapter="11",
         find='"step do_bench / profiler": round(p.do_bench_us / float(s["gpu_time_us"]), 2)',
         replace='"step do_bench / profiler": round(float(s["gpu_time_us"]) / p.do_bench_us, 2)',
         shows="11: the two timers' ratio inverted", tests=TRAIN_S_T),
    # --- the in-browser guess judge (every chapter) ---------------------------------------------------
    dict(id="guessjs-micro-sign", file=GP, cls="js", chapter="all",
         find='"ns": 1e-3, "µs": 1.0, "μs": 1.0,', replace='"ns": 1e-3, "μs": 1.0,',
         shows="'12 µs' (the micro sign, U+00B5) refused as not in µs: the 'duplicate' spelling dropped from the units "
               "table the browser's judge reads", tests=GUESS_S_T),
    dict(id="guessjs-status-words", file=GP, cls="js", chapter="all",
         find='"missing": "missing from your guess", "extra": "not in the trace"',
         replace='"missing": "not in the trace", "extra": "missing from your guess"',
         shows="a kernel the reader left out is shown as 'not in the trace' (the words the browser's judge reads)",
         tests=GUESS_S_T),
    dict(id="guessjs-some-matched", file=G, cls="js", chapter="all",
         find='const right = items.every((item) => item.status === "matched");',
         replace='const right = items.some((item) => item.status === "matched");',
         shows="a kernel list with one right kind judged right", tests=GUESS_T),
    dict(id="guessjs-tolerance-of-guess", file=G, cls="js", chapter="all",
         find="Math.abs(value - answer) <= tolerance * Math.abs(answer)", replace="Math.abs(value - answer) <= tolerance * Math.abs(value)",
         shows="a number far above the answer judged right (the tolerance taken of the guess)", tests=GUESS_T),
    # --- the occupancy calculator (its JavaScript) and chapter 07 ---------------------------------------
    dict(id="occjs-active-max", file=OJ, cls="js", chapter="calculator",
         find="const activeBlocks = Math.min(...data.limiters.map((k) => blockLimits[k]));",
         replace="const activeBlocks = Math.max(...data.limiters.map((k) => blockLimits[k]));",
         shows="the calculator's blocks per SM the loosest limit, not the tightest", tests=CALC_T),
    dict(id="occjs-register-util-warp", file=OJ, cls="js", chapter="calculator",
         find="registers: (activeBlocks * regsPerBlock) / spec.registersPerSm,",
         replace="registers: (activeBlocks * regsPerWarp) / spec.registersPerSm,",
         shows="the calculator's 'registers in use' bar counts one warp per block", tests=CALC_T),
    dict(id="occjs-cap-swapped", file=OJ, cls="js", chapter="calculator",
         find='(limit === "opt-in" ? spec.sharedMemoryPerBlockOptin : spec.sharedMemoryPerBlockDefault)',
         replace='(limit === "opt-in" ? spec.sharedMemoryPerBlockDefault : spec.sharedMemoryPerBlockOptin)',
         shows="the calculator fits 0 blocks above 48 KiB with opt-in", tests=CALC_T),
    dict(id="occ-longest-kernel-min", file=OL, cls="minmax", chapter="07",
         find='return k.loc[k["dur_us"].idxmax()]', replace='return k.loc[k["dur_us"].idxmin()]',
         shows="07: 'the longest kernel' is the shortest", tests=OCC_T),
    dict(id="occ-tflops-ms", file=OL, cls="unit", chapter="07",
         find='round(q.model_tflops(prof.shape, gpu_us), 1)', replace='round(q.model_tflops(prof.shape, gpu_us * 1e3), 1)',
         shows="07: model TFLOP/s 1000× too small (the time handed over in ns where µs is expected)", tests=OCC_S_T),
    dict(id="occ-speedup-inverted", file=OL, cls="ratio", chapter="07",
         find='"speedup": f"{nv / fl:.1f}"', replace='"speedup": f"{fl / nv:.1f}"',
         shows="07: 'flash is 0.1× faster'", tests=OCC_T),
    dict(id="occtruth-achieved-column", file=OT, cls="column", chapter="07",
         find='round(float(r["achieved_occupancy_pct"]) / theo.occupancy_pct, 2)',
         replace='round(float(r["theoretical_occupancy_pct"]) / theo.occupancy_pct, 2)',
         shows="07: 'achieved / theoretical' reads 1.00 everywhere", tests=OCC_T),
    # --- torch.compile (06b), Flex (06c), a Hub kernel (04d) ------------------------------------------
    dict(id="compiled-fused-first", file=CO, cls="minmax", chapter="06b",
         find='return k.sort_values("dur_us").iloc[-1]', replace='return k.sort_values("dur_us").iloc[0]',
         shows="06b: 'the fused kernel' is the shortest kernel", tests=CF_T),
    dict(id="compiled-first-call-seconds", file=CO, cls="unit", chapter="06b",
         find='f"{fn * 1e3:.1f}"', replace='f"{fn:.1f}"',
         shows="06b: naive's first call in seconds labelled ms", tests=CF_T),
    dict(id="compiled-faster-inverted", file=CO, cls="ratio", chapter="06b",
         find='per forward ({gn_us / gc_us:.2f}× faster)', replace='per forward ({gc_us / gn_us:.2f}× faster)',
         shows="06b: 'compiled is 0.4× faster'", tests=CF_T),
    dict(id="flex-busy-inverted", file=FL, cls="ratio", chapter="06c",
         find='"GPU busy %": None if b is None else round(b.busy_pct, 1),',
         replace='"GPU busy %": None if b is None else round(100 * b.wall_us / b.busy_us, 1),',
         shows="06c: 'GPU busy 250%'", tests=CF_T + TIMER_T),
    dict(id="flex-widest-gap-first", file=FL, cls="minmax", chapter="06c",
         find='return int(rows.sort_values("loop / busy").iloc[-1]["seq"])',
         replace='return int(rows.sort_values("loop / busy").iloc[0]["seq"])',
         shows="06c: the seq where the call outlasts its kernel most is where it does least", tests=CF_T + TIMER_T),
    dict(id="flex-setup-us", file=FL, cls="unit", chapter="06c",
         find='"mask set-up ms": None if setup is None else round(setup * 1e3, 1)',
         replace='"mask set-up ms": None if setup is None else round(setup * 1e6, 1)',
         shows="06c: the block mask's set-up in µs labelled ms", tests=CF_T),
    # --- the caller's timer behind every "bound by" verdict (issue 38): caught on a fake timers.json
    # over the H200's traces (tests/timer_fakes.py), and on every real set that has one ---------------
    dict(id="bound-median-min", file=BD, cls="stat", chapter="08",
         find="return bound(median(loop), busy,", replace="return bound(min(loop), busy,",
         shows="08/09/06c/11: a loop's time per call is its fastest repeat, not the median", tests=TIMER_T),
    dict(id="bound-even-wall", file=BD, cls="compare", chapter="08",
         find="if spread is not None and spread[0] <= line <= spread[1]:",
         replace="if spread is not None and spread[0] <= wall <= spread[1]:",
         shows="every timed call reads 'about even' (the median is always inside its own spread)", tests=TIMER_T),
    dict(id="bound-line-side", file=BD, cls="compare", chapter="08",
         find="    elif wall <= line:\n        by = GPU", replace="    elif wall >= line:\n        by = GPU",
         shows="bound by the GPU and by the CPU swapped", tests=TIMER_T),
    dict(id="bound-busy-key", file=BD, cls="column", chapter="08",
         find='busy_beside = summary.get("loop_busy_us")', replace='busy_beside = summary.get("busy_us")',
         shows="the verdict's busy time from the trace of another process, not the one beside the loop", tests=TIMER_T),
    dict(id="timers-section-swap", file="helpers/core/timers_file.py", cls="swap", chapter="08",
         find='return trace_path.parent / FILE, "forwards", key', replace='return trace_path.parent / FILE, "training_steps", key',
         shows="no forward has a caller's timer: every verdict vanishes", tests=TIMER_T),
    dict(id="glue-timer-even-as-cpu", file="helpers/views/prose.py", cls="compare", chapter="08",
         find="cpu = [n for n, b in timed.items() if b.by == CPU]", replace="cpu = [n for n, b in timed.items() if b.by != GPU]",
         shows="08: the sentence calls an about-even stage bound by the CPU", tests=TIMER_T),
    dict(id="roofline-even-as-no", file=R, cls="compare", chapter="09",
         find="cpu = None if b is None or b.by == EVEN else b.cpu_bound", replace="cpu = None if b is None else b.cpu_bound",
         shows="09: an about-even forward reads 'bound by the CPU: no'", tests=TIMER_T),
    dict(id="flex-gap-trace-busy", file=FL, cls="column", chapter="06c",
         find='"gap µs": None if b is None else round(b.wall_us - b.busy_us, 1),',
         replace='"gap µs": None if b is None else round(b.wall_us - float(s["gpu_time_us"]), 1),',
         shows="06c: the gap from the loop minus another run's GPU time", tests=TIMER_T),
    dict(id="training-loop-min", file=T, cls="minmax", chapter="11",
         find='"step loop µs": None if b is None else round(b.wall_us, 1),',
         replace='"step loop µs": None if b is None else round(b.spread[0], 1),',
         shows="11: a step's loop time is its fastest repeat", tests=TIMER_T),
    dict(id="later-call-mixed", file=BD, cls="stat", chapter="06b",
         find="if all(_known(x) and len(x) for x in loops):", replace="if any(_known(x) and len(x) for x in loops):",
         shows="06b/06c: a later call timed by the loop set against another timed by do_bench", tests=TIMER_T),
    dict(id="hub-ratio-inverted", file=HF, cls="ratio", chapter="04d",
         find='per forward ({gh / gs:.2f}×)', replace='per forward ({gs / gh:.2f}×)',
         shows="04d: the Hub kernel's time over SDPA's, inverted in the evidence", tests=CLAIMS_T + ["tests/test_hub.py"]),
    # --- issue 38: what the independent layer did not read (charts, article figures, decoded names) ---
    dict(id="chart-roofline-point-pct", file=R, cls="column", chapter="09",
         find='fig.add_scatter(x=[r["FLOP/B"]], y=[r["TFLOP/s"]], mode="markers", name=r["stage"],',
         replace='fig.add_scatter(x=[r["FLOP/B"]], y=[r["% of roof"]], mode="markers", name=r["stage"],',
         shows="09: each stage's roofline marker drawn at its % of roof on the TFLOP/s axis", tests=CHART_T),
    dict(id="chart-roofline-kernels-pct", file=R, cls="column", chapter="09",
         find='x=k["FLOP/B"], y=k["TFLOP/s"], mode="markers", name="each kernel (click to show)",',
         replace='x=k["FLOP/B"], y=k["% of roof"], mode="markers", name="each kernel (click to show)",',
         shows="09: the per-kernel points (on demand) at their % of roof on the TFLOP/s axis", tests=CHART_T),
    dict(id="chart-sweep-roof-pct", file=R, cls="column", chapter="09",
         find='fig.add_scatter(x=rows["FLOP/B"], y=rows["TFLOP/s"], mode="lines+markers", name=stage,',
         replace='fig.add_scatter(x=rows["FLOP/B"], y=rows["% of roof"], mode="lines+markers", name=stage,',
         shows="09: the sequence sweep's lines drawn at each point's % of roof on the TFLOP/s axis",
         tests=CHART_T),
    dict(id="chart-training-kinds-ms", file=T, cls="unit", chapter="11",
         find='rows.append({"stage": stage, "phase": phase, "kind": kind, "us": float(g["dur_us"].sum())})',
         replace='rows.append({"stage": stage, "phase": phase, "kind": kind, "us": float(g["dur_us"].sum()) / 1e3})',
         shows="11: the forward/backward bars in ms on an axis labelled 'GPU µs in one step'", tests=CHART_T),
    dict(id="chart-training-fwd-bwd-swapped", file=T, cls="swap", chapter="11",
         find="by = {f\"{r.stage} {'fwd' if r.phase == 'forward' else 'bwd'}\": r.us for r in g.itertuples()}",
         replace="by = {f\"{r.stage} {'bwd' if r.phase == 'forward' else 'fwd'}\": r.us for r in g.itertuples()}",
         shows="11: each stage's forward drawn as its backward and the reverse", tests=CHART_T),
    dict(id="article-cudnn-cpu-reads-gpu", file=C, cls="column", chapter="06",
         find="article = \", \".join(f\"{s} {A100_REFERENCE[s]['CPU µs']:.0f} µs\" for s in cpu if s in A100_REFERENCE)",
         replace="article = \", \".join(f\"{s} {A100_REFERENCE[s]['GPU µs']:.0f} µs\" for s in cpu if s in A100_REFERENCE)",
         shows="06: cuDNN's CPU verdict quotes the article's GPU times as its CPU times (186 µs for 214)",
         tests=ARTICLE_T),
    dict(id="article-cpu-flash-efficient-swapped", file=A, cls="sentence", chapter="06",
         find='"sdpa_efficient": {"GPU µs": 277.9, "CPU µs": 117.0},\n    "sdpa_flash": {"GPU µs": 146.8, "CPU µs": 138.0},',
         replace='"sdpa_efficient": {"GPU µs": 277.9, "CPU µs": 138.0},\n    "sdpa_flash": {"GPU µs": 146.8, "CPU µs": 117.0},',
         shows="06/08: the article's CPU times of flash and efficient transposed when its table was copied",
         tests=ARTICLE_T),
    dict(id="article-efficient-gpu-typo", file=A, cls="sentence", chapter="06",
         find='"sdpa_efficient": {"GPU µs": 277.9,', replace='"sdpa_efficient": {"GPU µs": 279.7,',
         shows="06/08: the article's efficient GPU time mistyped (279.7 for 277.9) in the verdict and the closing table",
         tests=ARTICLE_T),
    dict(id="article-math-ms-swapped", file=C, cls="sentence", chapter="03",
         find='slower ({a100_math:.3f} / {a100_inplace:.3f} ms)', replace='slower ({a100_inplace:.3f} / {a100_math:.3f} ms)',
         shows="03: '3.7× slower (1.955 / 7.239 ms)': the article's two times in the wrong order", tests=ARTICLE_T),
    dict(id="names-nvjet-tile-second-dims", file=NV, cls="column", chapter="all",
         find='tile = dims[0]\n        d["tile_m"]', replace='tile = dims[1]\n        d["tile_m"]',
         shows="every cuBLAS nvjet gemm 'reads as' its second AxB token (64x8) as its CTA tile", tests=NAMES_T),
    dict(id="names-nvjet-cluster-second-dims", file=NV, cls="column", chapter="all",
         find='d["cluster"] = dims[2]', replace='d["cluster"] = dims[1]',
         shows="every nvjet gemm's thread-block cluster read from the wrong AxB token ('cluster 64x8')", tests=NAMES_T),
    dict(id="names-flash-traits-order", file=FA, cls="swap", chapter="all",
         find='"block_m", "block_n", "warps", "Is_Q_in_regs"', replace='"block_n", "block_m", "warps", "Is_Q_in_regs"',
         shows="FlashAttention-2's forward at head_dim 128 reads as 64x128 tiles (its traits are <128, 128, 64, ...>)",
         tests=NAMES_T),
    dict(id="names-softmax-rows-times-two", file=AT, cls="unit", chapter="all",
         find='d["elements_per_row"] = 2 ** d[key]', replace='d["elements_per_row"] = 2 * d[key]',
         shows="ATen's softmax 'reads as' rows of 20 where its template says 2^10 = 1024", tests=NAMES_T),
    dict(id="article-a100-launch-registers-threads", file=OL, cls="swap", chapter="07",
         find='ARTICLE_A100 = {"gpu": "A100", "registers": 240, "threads": 256}',
         replace='ARTICLE_A100 = {"gpu": "A100", "registers": 256, "threads": 240}',
         shows="07: the article's A100 column worked out for 256 registers × 240 threads (its two figures transposed)",
         tests=ARTICLE_T),
    dict(id="chart-durations-sorted-by-time", file=VC, cls="sort", chapter="01-06c",
         find='    for step, events in table.groupby("step", sort=True):\n        events = events.reset_index(drop=True)',
         replace='    for step, events in table.groupby("step", sort=True):\n        events = events.sort_values("dur_us").reset_index(drop=True)',
         shows="01-06c: the GPU events' bars sorted by duration but numbered as the launch order", tests=CHART_T),
    # --- the views: what a reader hovers ----------------------------------------------------------
    dict(id="timeline-hover-end-as-duration", file="helpers/views/charts.py", cls="column", chapter="01",
         find='%{customdata[2]:.1f} µs, launched by', replace='%{x:.1f} µs, launched by',
         shows="every stage page: a GPU bar's hover reads where it ends (plotly's %{x} of a based bar) as its duration",
         tests=[IND + "test_timeline_hover.py"]),
    dict(id="guess-misplaced-as-extra", file=GP, cls="js", chapter="03",
         find='status = ("misplaced" if any(word in w for w in loose_trace)',
         replace='status = ("extra" if any(word in w for w in loose_trace)',
         shows="03: a matmul the alignment placed elsewhere reads 'not in the trace' beside two gemms",
         tests=GUESS_T),
    dict(id="training-million-none", file=T, cls="sentence", chapter="11",
         find='values["tr_wall_million"] = sentence_for(',
         replace='values["tr_wall_million"] = (", ".join(past) or "none") if past is not None else sentence_for(',
         shows="11 (H100 set): 'only none stays past a million tokens'",
         tests=["tests/test_glue_variants.py", "tests/independent/test_ch11_raw.py"]),
]

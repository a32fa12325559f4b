"""tools/record_hopper.py without a GPU: its parsing of ncu's source page (the shape PROBE.md saw:
a "Kernel Name" line before each kernel's Address/Source table), and a whole run against a fake
`ncu` executable that answers like ncu does (the files it writes, laid out as the replay set's
hopper/ folder, read back by helpers.hopper.sources)."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import record_hopper  # noqa: E402

SOURCE_PAGE = ('"Kernel Name","cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"\n'
               '"Address","Source","launch__block_size"\n'
               '"0x7f00","USETMAXREG.DEALLOC.CTAPOOL 0x18","384"\n'
               '"0x7f10","@P0 UTMALDG.2D [UR8], [UR4]","384"\n'
               '"0x7f20","HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT","384"\n'
               '"Kernel Name","void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>(Flash_fwd_params)"\n'
               '"Address","Source","launch__block_size"\n'
               '"0x7f00","LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR4][R4.64]","128"\n'
               '"0x7f10","HMMA.16816.F32.BF16 R4, R8, R12, R4","128"\n')


def test_the_source_page_splits_at_each_kernel_name():
    rows, head = record_hopper.sass_listing(SOURCE_PAGE)
    instructions = [r for r in rows if r[1] != "#"]
    assert [r[0] for r in instructions] == ["0", "0", "0", "1", "1"]
    assert instructions[1] == ["0", "0x7f10", "@P0 UTMALDG.2D [UR8], [UR4]"]
    assert [r[0] for r in rows if r[1] == "#"] == ["0", "1"]   # the kernel names, kept as markers
    assert head.startswith('"Kernel Name"')


def test_a_page_without_kernel_name_lines_splits_at_each_header():
    page = '"Address","Source"\n"0x10","HMMA.16816 R1"\n"Address","Source"\n"0x10","HGMMA.64x64x16 R1"\n'
    rows, _ = record_hopper.sass_listing(page)
    assert rows == [["0", "0x10", "HMMA.16816 R1"], ["1", "0x10", "HGMMA.64x64x16 R1"]]


FAKE_NCU = r'''#!/usr/bin/env python3
import csv, sys
a = sys.argv[1:]
if a == ["--version"]:
    print("Version 2025.3.1.0 (build 1) (public-release)"); sys.exit(0)
if a == ["--query-metrics"]:
    print("sm__inst_executed_pipe_tensor_op_gmma   Counter  x"); sys.exit(0)
if "-o" in a:
    open(a[a.index("-o") + 1] + ".ncu-rep", "w").write("fake"); sys.exit(0)
if a[a.index("--page") + 1] == "raw":
    rows = [["ID", "Kernel Name", "launch__block_size", "sass__inst_executed_per_opcode"], ["", "", "", "inst"],
            ["0", "cudnn_generated_k", "384", "1,000 (HGMMA: 600; UTMALDG: 10)"], ["1", "flash_fwd_kernel", "128", "900 (HMMA: 800)"]]
    if "--print-nvtx-rename" in a:
        rows[2][1], rows[3][1] = "sdpa_cudnn__shape", "sdpa_flash__shape"
    csv.writer(sys.stdout, quoting=csv.QUOTE_ALL).writerows(rows)
else:
    sys.stdout.write(open(sys.argv[0] + ".source").read())
'''


def test_a_whole_run_against_a_fake_ncu(tmp_path, monkeypatch):
    import torch
    from helpers.sources import ncu, provenance
    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU)
    exe.chmod(0o755)
    (tmp_path / "ncu.source").write_text(SOURCE_PAGE)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(provenance, "device_facts", lambda: dict(
        gpu="NVIDIA H100 80GB HBM3", capability="9.0", sm_count=132, driver="x", torch="2.11", cuda="13.0", cudnn="9"))
    monkeypatch.setattr(ncu, "find_ncu", lambda: str(exe))
    out = tmp_path / "out"
    assert record_hopper.main(["--out", str(out), "--quick"]) == 0
    folder = out / "hopper"
    prov = json.loads((folder / "provenance.json").read_text())
    assert prov["gpu_slug"] == "h100-80gb-hbm3" and not prov["failed"]
    (part,) = prov["parts"]
    assert part.startswith("forward_fused__") and prov["parts"][part]["kernels"] == 2
    for suffix in (".raw.csv.gz", ".ranges.csv.gz", ".values.csv.gz", ".sass.csv.gz"):
        with gzip.open(folder / f"{part}{suffix}", "rt") as f:
            assert f.read().strip(), suffix
    with gzip.open(folder / f"{part}.raw.csv.gz", "rt") as f:
        assert "HGMMA: 600" in f.read()   # the instances spelled out (--print-metric-instances details)


def test_the_recorder_imports_no_plotly_or_jupyter():
    source = (ROOT / "tools" / "record_hopper.py").read_text()
    for forbidden in ("plotly", "IPython", "nbformat", "jupyter", "helpers.hopper", "helpers.views"):
        assert f"import {forbidden}" not in source and f"from {forbidden}" not in source


def test_a_details_page_reads_each_cell_as_its_aggregate():
    """A real raw page printed with `--print-metric-instances details` (an H100's, 2026-12-07)
    writes every metric as its aggregate and then its instances ('168 (0: 168)'), and a metric with
    no aggregate as its one instance ('(0: fmha_...)'): each reads as the aggregate, the per-opcode
    columns keep their instances for parse_instances."""
    import random
    import pandas as pd
    from helpers.hopper import core
    rng = random.Random(3)
    numbers = [rng.randint(0, 10**9) for _ in range(20)]
    raw = pd.DataFrame({
        "launch__registers_per_thread": [f"{n:,} (0: {n:,})" for n in numbers],
        "launch__kernel_name": [f"(0: kernel_{n})" for n in numbers],
        "gpu__time_duration.sum": [f"{n / 7:.3f}" for n in numbers],
        core.OPCODE_METRIC: [f"{n:,} (HGMMA: {n:,})" for n in numbers],
    })
    out = core.aggregate_cells(raw)
    assert out["launch__registers_per_thread"].tolist() == numbers
    assert out["launch__kernel_name"].tolist() == [f"kernel_{n}" for n in numbers]
    assert out[core.OPCODE_METRIC].tolist() == raw[core.OPCODE_METRIC].tolist()
    assert [core.parse_instances(c) for c in out[core.OPCODE_METRIC]] == [{"HGMMA": n} for n in numbers]


def test_a_details_page_keeps_its_units_and_copies_them_once():
    """aggregate_cells hands back the frame's attrs (ncu's units row) whole, and does not have
    pandas deep-copy them into every column it reads: a real raw page has hundreds of columns, and
    that copy cost the test suite about 40 s (run 12, benchmarks/results/test_suite_time.md)."""
    import pandas as pd
    from helpers.hopper import core

    class Counted(dict):
        copies = 0

        def __deepcopy__(self, memo):
            Counted.copies += 1
            return Counted(self)

    columns = {f"metric_{i}.sum": [f"{i:,} (0: {i:,})"] * 3 for i in range(200)}
    raw = pd.DataFrame(columns)
    raw.attrs = {"units": Counted({c: "byte" for c in columns}), "source": "raw.csv.gz"}
    Counted.copies = 0
    out = core.aggregate_cells(raw)
    assert out.attrs == raw.attrs
    assert out["metric_7.sum"].tolist() == [7, 7, 7]
    assert Counted.copies < 20, f"the units were deep-copied {Counted.copies} times for 200 columns"


def test_a_listing_printed_twice_in_a_row_goes_to_one_kernel():
    """ncu's source page printed some kernels' SASS twice in a row (an H100's unfused forwards: 53
    listings for 30 kernels), and spells names in full where the raw page shortens them: each
    kernel gets its own listing, and where two readings would fit, none is guessed."""
    from helpers.hopper import core
    kernels = ["nvjet_a", "void native::elementwise_kernel<128, 4, void f>(int)", "void native::fill<4>(int)",
               "void native::fill<4>(int)"]
    named = {0: "nvjet_a", 1: "void at::native::elementwise_kernel<(int)128, (int)4, void f>(int)",
             2: "void at::native::elementwise_kernel<(int)128, (int)4, void f>(int)",
             3: "void at::native::fill<(int)4>(int)", 4: "void at::native::fill<(int)4>(int)"}
    listing = {0: ["HGMMA"], 1: ["FFMA"], 2: ["FFMA"], 3: ["STG"], 4: ["STG"]}
    assert core.align(kernels, named, listing) == {0: 0, 1: 1, 2: 3, 3: 4}
    # the two fill listings differ: each is one kernel's, and the elementwise one is printed twice
    listing[4] = ["STG", "EXIT"]
    assert core.align(kernels, named, listing) == {0: 0, 1: 1, 2: 3, 3: 4}
    # three identical fill listings for two fill kernels: either could be the repeat, so no reading
    # is taken from the repeats
    named = {0: "nvjet_a", 1: named[1], 2: named[3], 3: named[3], 4: named[3]}
    listing = {0: ["HGMMA"], 1: ["FFMA"], 2: ["STG"], 3: ["STG"], 4: ["STG"]}
    assert core.segments(kernels, named, listing) is None

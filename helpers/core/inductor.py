"""Inductor's generated output code, read as text: the Triton kernels it defines and the `call`
function that runs them.

torch.compile writes one Python module per compiled graph (`torch._inductor.utils.
run_and_get_code` returns their sources; the recorder keeps them in the trace's provenance,
`extra["generated_code"]`). Each Triton kernel sits in it as a string:

    # kernel path: /tmp/torchinductor_.../xy.py
    # Topologically Sorted Source Nodes: [mul, scores_1, softmax], Original ATen: [aten.mul, ...]
    # Source node to ATen node mapping:
    #   mul => mul
    triton_per_fused_..._0 = async_compile.triton('triton_per_fused_..._0', '''
    ...the kernel's source...
    ''', device_str='cuda')

and a `call(args)` function launches the graph's kernels in order: `extern_kernels.bmm(...)` for
what stays a library call, `triton_..._0.run(...)` for each generated kernel.

Pure text, no torch import: this runs on recorded traces, on machines with no GPU.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

_KERNEL = re.compile(
    r"^(?P<var>\w+) = async_compile\.triton\((?P<q>['\"])(?P<name>\w+)(?P=q),\s*'''\n"
    r"(?P<source>.*?)\n'''", re.M | re.S)
_SOURCE_NODES = re.compile(r"^# (?:Topologically Sorted|Unsorted) Source Nodes: \[(?P<nodes>[^\]]*)\], "
                           r"Original ATen: \[(?P<aten>[^\]]*)\]", re.M)
_MAPPING_LINE = re.compile(r"^#\s{3}(?P<node>\S+) => (?P<aten>.+)$")
_CONSTEXPR = re.compile(r"^\s*(?P<key>[A-Z][A-Z0-9_]*)\s*:\s*tl\.constexpr\s*=\s*(?P<value>[^\s#]+)", re.M)
_NUMEL = re.compile(r"^\s*(?P<key>\w*numel)\s*=\s*(?P<value>\d+)\s*$", re.M)
_DECORATOR = re.compile(r"@triton_heuristics\.(?P<kind>\w+)\(")


@dataclass(frozen=True)
class GeneratedKernel:
    """One Triton kernel of Inductor's output code."""

    name: str
    source: str                      # the Triton source, as Inductor wrote it
    source_nodes: tuple[str, ...]    # the Python-level nodes fused into it (variable names)
    original_aten: tuple[str, ...]   # the aten ops they came from, as Inductor lists them
    node_to_aten: dict = field(default_factory=dict)  # source node -> the aten nodes it became
    heuristic: str | None = None     # triton_heuristics.<this>: pointwise, persistent_reduction, template, ...
    constants: dict = field(default_factory=dict)     # NAME: tl.constexpr = value, as written
    numels: dict = field(default_factory=dict)        # xnumel, r0_numel, ...: the problem sizes it was built for
    launch: dict = field(default_factory=dict)        # num_warps, num_stages where the decorator says

    @property
    def lines(self) -> int:
        return self.source.count("\n") + 1


def _comment_block(code: str, start: int) -> list[str]:
    """The comment lines right above position `start` (the kernel's metadata)."""
    lines = code[:start].rstrip("\n").split("\n")
    block = []
    for line in reversed(lines):
        if not line.startswith("#"):
            break
        block.append(line)
    return block[::-1]


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _launch(source: str) -> dict:
    """num_warps and num_stages from the decorator's arguments, where it names them."""
    found = {}
    for key in ("num_warps", "num_stages"):
        m = re.search(rf"['\"]?{key}['\"]?\s*[=:]\s*(\d+)", source)
        if m:
            found[key] = int(m.group(1))
    return found


def kernels(sources: list[str] | None) -> list[GeneratedKernel]:
    """Every Triton kernel defined in the generated modules, in the order they are defined."""
    out = []
    for code in sources or []:
        for m in _KERNEL.finditer(code):
            comments = _comment_block(code, m.start())
            meta = _SOURCE_NODES.search("\n".join(comments))
            nodes = tuple(n.strip() for n in meta.group("nodes").split(",") if n.strip()) if meta else ()
            aten = tuple(a.strip() for a in meta.group("aten").split(",") if a.strip()) if meta else ()
            mapping = {}
            for line in comments:
                mm = _MAPPING_LINE.match(line)
                if mm:
                    mapping[mm.group("node")] = tuple(a.strip() for a in mm.group("aten").split(","))
            source = m.group("source")
            decorator = _DECORATOR.search(source)
            out.append(GeneratedKernel(
                name=m.group("name"), source=source, source_nodes=nodes, original_aten=aten,
                node_to_aten=mapping, heuristic=decorator.group("kind") if decorator else None,
                constants={k: _literal(v) for k, v in _CONSTEXPR.findall(source)},
                numels={k: int(v) for k, v in _NUMEL.findall(source)},
                launch=_launch(source)))
    return out


def kernel(sources: list[str] | None, name: str) -> GeneratedKernel | None:
    """The generated kernel called `name` (as the trace names it), or None."""
    return next((k for k in kernels(sources) if k.name == name), None)


def call_function(sources: list[str] | None) -> str | None:
    """The body of the first `call` function: what one compiled call runs, line by line."""
    for code in sources or []:
        m = re.search(r"^(?P<indent>[ \t]*)def call\((?:self, )?args\):\n", code, re.M)
        if not m:
            continue
        indent = len(m.group("indent"))
        lines = [m.group(0).rstrip("\n")]
        for line in code[m.end():].split("\n"):
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            lines.append(line)
        text = "\n".join(lines).rstrip()
        return "\n".join(line[indent:] for line in text.split("\n"))
    return None


def launched_in_call(sources: list[str] | None) -> list[str]:
    """What `call` launches, in order: `extern_kernels.<op>` and the Triton kernels' names."""
    body = call_function(sources)
    if body is None:
        return []
    names = {k.name for k in kernels(sources)}
    found = []
    for line in body.split("\n"):
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        m = re.search(r"\bextern_kernels\.(\w+)\(", stripped)
        if m:
            found.append(f"extern_kernels.{m.group(1)}")
            continue
        m = re.match(r"(\w+)\.run\(", stripped)
        if m and m.group(1) in names:
            found.append(m.group(1))
    return found

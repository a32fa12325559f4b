"""Chapter 10's count of the new kernels at the bigger batch, from the raw traces (gzip + json):
the kernel names of the last profiled step of each recording, and among the names only the big
batch launches, those of split-K matmuls and their reduce kernels. Issue 38: the page said "8 of
the new ones" (launches) beside 7 new names; a count of names and a count of launches must not
be mixed in one sentence."""
from __future__ import annotations

from collections import Counter

from . import raw

OWN = raw.TRACES / "own_model"


def last_step_kernels(name: str) -> Counter:
    f = raw.Forward(raw.events(OWN / f"{name}.json.gz"))
    return Counter(e["name"] for e in f.gpu if e["kind_cat"] == "kernel")


def test_split_k_is_counted_as_the_names_are():
    from helpers import Session, own_model
    small, big = last_step_kernels("encoder_train_step"), last_step_kernels("encoder_train_step_big")
    new = {n: c for n, c in big.items() if n not in small}
    split = {n: c for n, c in new.items() if "splitK" in n}
    s = Session(mode="replay")
    v = own_model.kernel_change(s.own_model("encoder_train_step"), s.own_model("encoder_train_step_big"), "t_change")
    assert v["new_names"] == len(new)
    assert v["split_k"] == len(split) <= v["new_names"]
    assert v["split_k_launches"] == sum(split.values())
    assert (v["kernels_before"], v["kernels_after"]) == (sum(small.values()), sum(big.values()))

"""Acquisition: where every number of the book comes from. The one live-or-replay decision
(modes), live capture with torch.profiler (capture) or the recorded replay set (replay), any trace
(anytrace) or callable (own_code), Nsight Compute (ncu) and the GPU's ceilings (ceilings). The
feature slices' acquisition is layer sources too, in its slice: the own model's experiments
(helpers/own_model/sources.py), the counters (helpers/counters/sources.py), the training steps
(helpers/training/sources_*.py) and the shared-memory experiment (helpers/smem_cliff/sources.py).

Builds on helpers.core only; views, occupancy and chapters never import it (the notebook acquires
through helpers' top level and hands the data to them)."""

"""Acquisition: where every number of the book comes from. The one live-or-replay decision
(modes), live capture with torch.profiler (capture) or the recorded replay set (replay), any trace
(anytrace) or callable (own_code), the "Your own model" experiments (own_model), Nsight Compute
(ncu), the GPU's ceilings (ceilings) and the shared-memory experiment (smem_cliff).

Builds on helpers.core only; views, occupancy and chapters never import it (the notebook acquires
through helpers' top level and hands the data to them)."""

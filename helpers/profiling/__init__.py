"""The profiling spine: the stage registry (stages), live capture with torch.profiler (capture) or
the recorded replay set (replay), both giving a Profile (profile), whose pandas tables come from
the chrome trace (trace) with kernel names decoded (names); modes picks live or replay.

Nothing here knows about pages, verdicts, charts, widgets or occupancy."""

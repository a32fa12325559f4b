"""The stages the training chapter trains: every stage with a backward, but hub_flash (the Hub
cannot be reached from the machine that records the replay set) and flex_sliding (flex with
another mask). No torch import: the pages name them without loading torch."""
TRAINING_STAGES = ("naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn",
                   "sdpa_auto", "naive_compiled", "flex")

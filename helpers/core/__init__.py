"""The core: what everything else stands on, and nothing here acquires data.

config (every environment variable, the replay folder, recording paths), errors, the stage
registry (stages), the Profile type (profile) and its pandas tables from the chrome trace (trace),
the kernel-name decoders (names/), and pure analyses (inductor, article's figures). The feature
slices' own cores (helpers/breakdown/core.py, helpers/training/core.py, ...) are layer core too.
Imports nothing above it."""

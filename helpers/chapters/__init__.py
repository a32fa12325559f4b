"""One module per chapter's own code: hub_flash (05b), compiled (06b), flex (06c), counters (05,
07, 09), occupancy_lessons and occupancy_truth (07), roofline (09), own_model (10), and claims
(the article's claims, each chapter's verdicts gathered for the closing table).

Builds on core, views and occupancy; never on sources."""

"""One module per chapter's own code: hub_flash (05b), compiled (06b), flex (06c),
occupancy_lessons and occupancy_truth (07), roofline (09), and claims (the article's claims, each
chapter's verdicts gathered for the closing table). A chapter whose topic spans layers is a
feature slice with its chapter module inside: helpers/counters/chapter.py (05, 07, 09),
helpers/own_model/chapter.py (10), helpers/training/chapter.py (11).

Builds on core, views and occupancy; never on sources."""

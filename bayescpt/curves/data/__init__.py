"""The loss-curve table: its columns and per-curve views (:mod:`.table`), reading and the one
validation (:mod:`.validate`), thinning for a fit (:mod:`.thinning`), a run's observed prefix
(:mod:`.observed`) and CPT runs as rows (:mod:`.cpt_rows`)."""

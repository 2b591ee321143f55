"""Judging loss-curve fits: comparison (:mod:`.compare`), scores (:mod:`.scores`), a point-fit
baseline (:mod:`.baseline`), simulation (:mod:`.simulate`) and plots (:mod:`.plots`)."""

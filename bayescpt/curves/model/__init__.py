"""The model of a loss curve: the laws (:mod:`.laws`), the config of a fit (:mod:`.config`), the
hierarchical PyMC model (:mod:`.hierarchy`), prior draws (:mod:`.priors`), the fit
(:mod:`.fit`), its schedule level (:mod:`.schedule_level`) and a CPT fit's other validation sets
(:mod:`.other_sets`)."""

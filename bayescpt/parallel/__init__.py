"""Many fits on Dask distributed: sweep files (:mod:`.spec`), one fit as a worker task
(:mod:`.tasks`, with a per-worker cache of compiled models), the engine that runs, resumes and
records them (:mod:`.engine`)."""

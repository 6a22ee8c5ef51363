"""The conformance suite every level runs (DESIGN principle 5): programs built with
``ProgramBuilder``, each with its independent numpy expectation (:mod:`.cases`), the levels
that run them (:mod:`.runners`), random valid programs (:mod:`.random_programs`) and a slow
reference interpreter (:mod:`.reference`)."""

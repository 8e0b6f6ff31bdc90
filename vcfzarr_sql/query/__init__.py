"""Predicates to chunks to rows: the only code that does it.

A filter is bound (:mod:`.expressions`), the store's zones pruned with it (:mod:`.prune`,
three-valued), a :class:`~.plan.ScanPlan` of chunk tasks made, each with its residual
(:mod:`.plan`); the one executor (:mod:`.execute`) decodes the tasks (:mod:`.decode`) and keeps
the rows the residual accepts (:mod:`.residual`), as Arrow record batches.
"""

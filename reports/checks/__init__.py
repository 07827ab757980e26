"""The history checks: the in-process engine (:mod:`.python_engine`, on the integer coding of
:mod:`.encode`) and the Spark engine (:mod:`.spark_engine`, its sequence checks in :mod:`.spark_order`),
which compute the same statistics; :func:`mqconform.reports.pipeline.check_runs` drives them."""

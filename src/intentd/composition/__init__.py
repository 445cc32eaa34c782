"""The composition root: the one place that builds adapters and hands them to roles.

- :mod:`~intentd.composition.process`: what one process runs (:class:`Roles`), its
  one pool (sized for those roles) and one Kafka producer, and :func:`run_process`.
- :mod:`~intentd.composition.roles`: each role wired from its loop and the ports
  it is given (``poll``, ``execute``, ``lifecycle``; ``api`` lives in ``api.server``).

Loop modules (``indexer.poller``, ``execution.executor``, ``lifecycle.consumer``)
wire nothing; the CLI asks this package for a process and runs it.
"""

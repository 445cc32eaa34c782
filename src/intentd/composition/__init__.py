"""The composition root: the one place that builds adapters and services and hands them to roles.

- :mod:`~intentd.composition.process`: what one process runs (:class:`Roles`), its
  one pool (sized for those roles), one Kafka producer and one ``ChainBook``, and
  :func:`run_process`.
- :mod:`~intentd.composition.roles`: each role wired from its loop and the ports
  it is given (``poll``, ``execute``, ``lifecycle``).
- :mod:`~intentd.composition.webhooks`: the ``webhooks`` role, wired from its loops
  (``webhooks.intake``, ``webhooks.dispatcher``, ``webhooks.upkeep``).
- :mod:`~intentd.composition.api`: the API's services, built once per app, and the app
  on them (served by ``api.server.api_role``).

Loop modules (``indexer.poller``, ``execution.executor``, ``lifecycle.consumer``,
``webhooks.intake``) and the API's routes wire nothing; the CLI asks this package for
a process and runs it.
"""

"""Ranged scans: read a block range of a chain and credit what reached intent addresses.

One home for every scan that is not the poller's loop, all running one service
(:mod:`~intentd.scanning.service`: read and decode with the poller's code, credit
through ``lifecycle.crediting``), behind small ports (:mod:`~intentd.scanning.ports`):

- :mod:`~intentd.scanning.trigger`: trigger-processing (the API serves it, with its
  limits, ``api.processing``), its recipient-filtered reads in
  :mod:`~intentd.scanning.window`;
- :mod:`~intentd.scanning.rescan`: ``intentd intents rescan``;
- :mod:`~intentd.scanning.gap_recovery`: what a gap in a deposits log skipped;
- :mod:`~intentd.scanning.trigger_verifier`: the reorg safety of what
  trigger-processing and the rescan credited.
"""

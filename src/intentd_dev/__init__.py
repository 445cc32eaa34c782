"""Development tooling of intentd; not part of the product and not in its wheel.

- `intentd_dev.devinfra`: the local infrastructure (``make infra-up|infra-down|infra-status``)
  and the pieces tests reuse (fresh topics, throwaway anvil chains, test tokens);
- `intentd_dev.devchain`: an async driver of a local anvil, for tests, benchmarks and
  the recorder of RPC fixtures;
- `intentd_dev.demo`: ``make demo``, with `intentd_dev.demo_payer` (the end user) and
  `intentd_dev.webhook_receiver` (the merchant's webhook endpoint).

It lives beside ``src/intentd`` so that the editable install of ``make install``
(``pip install -e '.[dev]'``, which puts ``src/`` on the path) makes it importable, while
``[tool.setuptools.packages.find]`` keeps it out of the built wheel. It may import
``intentd``; ``intentd`` never imports it.
"""

"""Local development infrastructure: PostgreSQL, the Kafka dev broker, Tansu (a Kafka-compatible
broker for consumer groups of several members) and two anvil chains.

`python -m intentd_dev.devinfra up|down|status` (``make infra-up``) starts what is missing and
writes every endpoint to ``.local/infra.env``. Tests reuse the pieces directly:

- `intentd_dev.devinfra.kafka_mock.create_topics` creates fresh topics on the running broker;
- `intentd_dev.devinfra.tansu.launch` runs an extra Tansu (`tansu_binary` installs the pinned one);
- `intentd_dev.devinfra.anvil.start_anvil` runs an extra, ephemeral chain;
- `intentd_dev.devinfra.contracts.deploy_token` and `mint` deploy and fund test ERC-20s;
- `intentd_dev.devinfra.envfile.load_infra_env` reads the endpoints of the running stack.

Modules are imported on demand; importing this package starts nothing.
"""

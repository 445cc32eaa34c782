"""The public contract: what clients and the Kafka topics' consumers see, written once.

- :mod:`~intentd.contract.mode`: the mode (``test``/``live``) of keys, endpoints and events.
- :mod:`~intentd.contract.record`: the intent as every role reads it (``IntentRow``),
  its public JSON record (``IntentRecord``) and :func:`~intentd.contract.record.render_record`.
- :mod:`~intentd.contract.events`: the event types (the domain's ``EventType``, the only
  definition), the envelope (``Envelope``) and :func:`~intentd.contract.events.envelope`.
- :mod:`~intentd.contract.asyncapi`: the AsyncAPI 3 document of the Kafka topics,
  generated from these types and ``intentd.messages`` (``make asyncapi`` writes
  ``docs/asyncapi.json``; a test keeps the two equal, as ``docs/openapi.json`` is kept).

The public shapes are ``TypedDict``s: the code that builds a record or an envelope is
type-checked against them, and the JSON Schemas of the OpenAPI and AsyncAPI documents
are generated from them, so a field is added in one place. Pure: no I/O library
(the import contracts in ``pyproject.toml``); the lifecycle, the webhooks, the API,
the console and the CLI import it, and it imports only the domain and the messages.
"""

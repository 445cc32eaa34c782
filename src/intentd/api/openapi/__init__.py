"""The OpenAPI document: links between operations, the committed file's dump, and
the ``Allow`` header read from it."""

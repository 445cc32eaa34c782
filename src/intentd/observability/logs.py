"""Logging: structlog JSON lines on stderr, the standard library's records included.

Code binds ``chain``, ``intent_id`` and ``tx_hash`` per unit of work with
``structlog.contextvars.bound_contextvars``. Secrets are never passed to a logger, and
tracebacks carry no frame locals (they can hold keys, tokens and seeds).
"""

from __future__ import annotations

import logging
import sys

import structlog
import structlog.tracebacks

__all__ = ["configure_logging"]


def configure_logging(level: str = "info") -> None:
    """Send JSON lines to stderr at ``level``; call once at process start.

    structlog's own loggers and the standard library's (uvicorn, aiokafka, asyncio)
    give the same JSON lines; a library record also names its ``logger``.
    """
    numeric = logging.getLevelNamesMapping()[level.upper()]
    stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    # Tracebacks without frame locals: locals can hold keys, tokens and seeds.
    tracebacks = structlog.processors.ExceptionRenderer(
        structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            stamp,
            tracebacks,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.contextvars.merge_contextvars,
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                stamp,
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                tracebacks,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric)

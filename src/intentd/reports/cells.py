"""CSV as an accountant's spreadsheet opens it safely: RFC 4180 text, and no cell a
spreadsheet would run as a formula.

Pure: no I/O. A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return is written with a leading ``'`` (OWASP, CSV injection): a spreadsheet shows it
as text instead of evaluating it. No figure of ours starts with one of them (amounts
are never negative), so only free text (metadata, a token's symbol) is ever escaped.
Cells holding ``,``, ``"`` or a line break are quoted, quotes doubled; lines end with
CRLF. :class:`CsvChunks` gathers lines into chunks of about :data:`CHUNK_BYTES`, so
a stream of a million rows is sent in a few thousand writes, never held whole.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

__all__ = ["CHUNK_BYTES", "FORMULA_STARTS", "CsvChunks", "safe_cell"]

FORMULA_STARTS = frozenset("=+-@\t\r")
"""First characters a spreadsheet may read as the start of a formula."""
CHUNK_BYTES = 64 * 1024


def safe_cell(text: str) -> str:
    """``text`` as a cell that no spreadsheet evaluates (quoting is the writer's)."""
    if text and text[0] in FORMULA_STARTS:
        return "'" + text
    return text


class CsvChunks:
    """Rows in, UTF-8 chunks of CSV out: :meth:`add` answers a chunk once one is full,
    :meth:`flush` the rest."""

    def __init__(self, chunk_bytes: int = CHUNK_BYTES) -> None:
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\r\n")
        self._limit = chunk_bytes

    def add(self, row: Sequence[str]) -> bytes | None:
        self._writer.writerow([safe_cell(cell) for cell in row])
        if self._buffer.tell() < self._limit:
            return None
        return self.flush()

    def add_all(self, rows: Iterable[Sequence[str]]) -> list[bytes]:
        return [chunk for row in rows if (chunk := self.add(row)) is not None]

    def flush(self) -> bytes:
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text.encode()

"""Reports for a merchant's accountant: CSV exports of every money movement over a date
range, and the reconciliation of each ended intent against the recorded transactions.

Pure decisions and formats live here (ranges, CSV cells, export rows, the
reconciliation arithmetic in integers of base units); :mod:`intentd.reports.streams`
turns what a :class:`~intentd.reports.ports.ReportReader` yields into bounded chunks of
bytes. The queries are in ``adapters.postgres.report_queries`` and
``adapters.postgres.report_exports``; the routes in ``api.reports.routes`` (docs/api.md,
Reports; docs/console.md, Reports).
"""

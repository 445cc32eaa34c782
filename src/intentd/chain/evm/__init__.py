"""The EVM family: pure decoding of JSON-RPC answers and the reads around it.

Deposits in blocks and ``Transfer`` logs (:mod:`.decoding`), proof that log answers are
whole (:mod:`.coverage`), transaction types (:mod:`.tx_types`), the balance
reconciliation (:mod:`.balances`, :mod:`.reconciled_ids`, :mod:`.reconciliation`), the
one path from a range's answers to its deposits (:mod:`.range_deposits`), finality of a
recorded deposit (:mod:`.finality`), and the EVM ports (:mod:`.ports`). No I/O library:
the JSON-RPC adapters are ``intentd.adapters.evm``.
"""

"""Talking to chains: one seam that every role reads and writes a chain through.

The core (this package's modules) is family-neutral: the chain's errors
(:mod:`~intentd.chain.errors`), its values (:mod:`~intentd.chain.blocks`,
:mod:`~intentd.chain.transfers`) and the capability ports every family implements
(:mod:`~intentd.chain.ports`). A family's pure decoding and the reads around it sit in a
package of their own beside it (:mod:`intentd.chain.evm`, the one family implemented); its
adapters, the only code that does I/O, are ``intentd.adapters.evm``. A chain's family is
``chains.NAME.family`` (docs/configuration.md); what a second family implements is in
docs/architecture.md, *A second chain family*.
"""

"""The EVM adapters: JSON-RPC over aiohttp and the implementations of the chain ports on it
(``intentd.chain``, ``intentd.chain.evm.ports``), the executor's writer and signer, the L1
fee, price feeds and token checks (docs/architecture.md, The chain seam)."""

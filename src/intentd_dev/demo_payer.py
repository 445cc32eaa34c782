"""The demo's end user: a funded dev account paying intents on the anvil chains.

``Payer.pay`` sends one transfer (native or ERC-20) and waits for its receipt.
Development tooling only.
"""

from __future__ import annotations

from pathlib import Path

from eth_account import Account
from eth_typing import ChecksumAddress
from web3 import Web3
from web3.types import TxParams, Wei

from intentd.settings import NATIVE_TOKEN, Settings

__all__ = ["Payer"]

ERC20_TRANSFER_ABI = [
    {
        "name": "transfer",
        "type": "function",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    }
]


class Payer:
    """The demo's end user: a funded dev account on each anvil chain."""

    def __init__(self, settings: Settings, key_file: str) -> None:
        self._account = Account.from_key(Path(key_file).read_text().strip())
        self._chains = {
            name: Web3(Web3.HTTPProvider(chain.rpc_urls[0]))
            for name, chain in settings.chains.items()
        }

    @property
    def address(self) -> ChecksumAddress:
        return Web3.to_checksum_address(self._account.address)

    def pay(self, chain: str, token: str, to: str, amount: int) -> str:
        w3 = self._chains[chain]
        tx: TxParams = {
            "from": self.address,
            "nonce": w3.eth.get_transaction_count(self.address, "pending"),
            "chainId": w3.eth.chain_id,
            "maxFeePerGas": Wei(w3.eth.gas_price * 2 + 10**9),
            "maxPriorityFeePerGas": Wei(10**9),
        }
        if token.lower() == NATIVE_TOKEN.lower():
            tx.update({"to": Web3.to_checksum_address(to), "value": Wei(amount), "gas": 21_000})
        else:
            contract = w3.eth.contract(
                address=Web3.to_checksum_address(token), abi=ERC20_TRANSFER_ABI
            )
            tx = contract.functions.transfer(
                Web3.to_checksum_address(to), amount
            ).build_transaction(tx)
        signed = self._account.sign_transaction(tx)
        tx_hash = w3.eth.send_raw_transaction(signed.raw_transaction)
        w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30)
        return "0x" + tx_hash.hex().removeprefix("0x")

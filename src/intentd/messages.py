"""Wire format of the messages the roles exchange through Kafka.

Every message is a JSON object with a ``kind`` and a stable ``id``; consumers apply
a message idempotently through unique keys in PostgreSQL, so a message delivered
twice has the effect of one. Addresses and hashes are lowercase 0x-hex; amounts
are decimal strings of integers in base units.

Topics (``<prefix>`` is ``kafka.topic_prefix``, ``intentd`` by default):

- ``<prefix>.deposits.<CHAIN>``: :class:`DepositMessage` and :class:`RetractionMessage`
  from the chain's poller, keyed by intent address (so one intent's messages stay
  in order on one partition).
- ``<prefix>.intent-events``: public lifecycle events (``contract.events.Envelope``),
  keyed by intent id.
- ``<prefix>.action-results``: :class:`ActionResultMessage` from the executors, keyed by
  intent id, written through the outbox with the action's status change.
- ``<prefix>.dlq``: messages the lifecycle did not apply (unparsable, a chain that does
  not match the topic or the config, or applying raised), with the reason.

The JSON Schemas of the first three are in docs/asyncapi.json (``make asyncapi``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

HASH_PATTERN = r"^0x[0-9a-f]{64}$"
ADDRESS_PATTERN = r"^0x[0-9a-f]{40}$"
NATIVE_LOG_INDEX = -1
"""``log_index`` of a native-coin transfer (a transaction's value)."""

AMOUNT_FIELDS = ("amount", "amount_sent", "gas_cost")
"""Base-unit fields, which go out as decimal strings (they exceed 64 bits; see
:func:`encode`, and the AsyncAPI document, ``intentd.contract.asyncapi``)."""

Hash = Annotated[str, Field(pattern=HASH_PATTERN)]
LowerAddress = Annotated[str, Field(pattern=ADDRESS_PATTERN)]


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    """One Kafka record to send: topic, key (the partition), encoded value, headers."""

    topic: str
    key: str
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


def deposits_topic(prefix: str, chain: str) -> str:
    return f"{prefix}.deposits.{chain}"


def events_topic(prefix: str) -> str:
    return f"{prefix}.intent-events"


def dlq_topic(prefix: str) -> str:
    return f"{prefix}.dlq"


def action_results_topic(prefix: str) -> str:
    return f"{prefix}.action-results"


def deposit_id(chain: str, tx_hash: str, token: str, transfer_index: int) -> str:
    """The identity of a transfer, the same on every fork: ``<CHAIN>:<tx>:<token>:<index>``.

    ``transfer_index`` is the transfer's position among its transaction's ``Transfer``
    logs of ``token`` (-1 for the native coin); see ``chain.evm.decoding``.
    """
    return f"{chain}:{tx_hash}:{token}:{transfer_index}"


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DepositMessage(_Message):
    """A confirmed transfer to a watched address, published at confirmation depth."""

    kind: Literal["deposit"] = "deposit"
    id: str
    chain: str
    chain_id: int = Field(gt=0)
    tx_hash: Hash
    log_index: int = Field(ge=NATIVE_LOG_INDEX)
    """The log's index in its block (-1 native): where the transfer was seen on this fork."""
    transfer_index: int | None = Field(default=None, ge=NATIVE_LOG_INDEX)
    """With ``chain``, ``tx_hash`` and ``token``, the transfer's identity on every fork: its
    position among the transaction's ``Transfer`` logs of ``token`` (-1 native). None only
    in messages of pollers older than this field (identity by content, see
    ``adapters.postgres.lifecycle_store.find_deposit``)."""
    block_number: int = Field(ge=0)
    block_hash: Hash
    block_time: int = Field(ge=0)
    """Block timestamp, seconds since the epoch."""
    token: LowerAddress
    """Token contract; the native coin is ``settings.NATIVE_TOKEN`` in lower case."""
    from_address: LowerAddress
    to_address: LowerAddress
    amount: int = Field(gt=0)
    observed_at_ms: int = Field(default=0, ge=0)
    """When the poller saw the block at confirmation depth (for latency figures)."""

    @field_validator("amount", mode="before")
    @classmethod
    def _amount_is_integer_string(cls, value: object) -> object:
        if isinstance(value, str) and not value.isdigit():
            raise ValueError("amount must be a decimal string of an integer in base units")
        return value


class RetractionMessage(_Message):
    """A previously published deposit whose block a reorg removed from the chain."""

    kind: Literal["retraction"] = "retraction"
    id: str
    chain: str
    tx_hash: Hash
    log_index: int = Field(ge=NATIVE_LOG_INDEX)
    """The log's index in the orphaned block (with ``block_hash``, the record retracted)."""
    block_number: int = Field(ge=0)
    block_hash: Hash
    """Hash of the orphaned block the deposit was published from."""
    to_address: LowerAddress
    token: LowerAddress | None = None
    transfer_index: int | None = Field(default=None, ge=NATIVE_LOG_INDEX)
    """The deposit's identity (see :class:`DepositMessage`); None if published before it."""


class ActionResultMessage(_Message):
    """What became of an action's transaction; ``id`` is ``action:<id>:<event>``."""

    kind: Literal["action_result"] = "action_result"
    id: str
    action_id: int = Field(gt=0)
    intent_id: int = Field(gt=0)
    action_kind: Literal["prefill", "relayer_refund", "fee_sweep", "user_refund"]
    event: Literal["sent", "confirmed", "failed"]
    """``sent``: first broadcast; ``confirmed``: mined with status 1 at confirmation depth;
    ``failed``: the retry policy gave up (nothing of it was mined with status 1)."""
    chain: str
    tx_hash: Hash | None = None
    block_number: int | None = Field(default=None, ge=0)
    amount_sent: int | None = Field(default=None, ge=0)
    """Base units delivered to the recipient (less than ``amount`` when gas came out of it)."""
    gas_cost: int | None = Field(default=None, ge=0)
    """Native base units the transaction paid for gas."""
    error: str | None = None


def action_result_id(action_id: int, event: str) -> str:
    return f"action:{action_id}:{event}"


def decode_action_result(raw: bytes) -> ActionResultMessage:
    """Parse an action-results message; raise ValueError with the reason if malformed."""
    try:
        return ActionResultMessage.model_validate_json(raw)
    except ValidationError as exc:
        raise ValueError(f"malformed action result: {_problems(exc)}") from None


ChainMessage = Annotated[DepositMessage | RetractionMessage, Field(discriminator="kind")]
_chain_message = TypeAdapter(ChainMessage)


def encode(message: _Message) -> bytes:
    """JSON bytes of a message; amounts go out as strings (they exceed 64 bits)."""
    data = message.model_dump()
    for key in AMOUNT_FIELDS:
        if data.get(key) is not None:
            data[key] = str(data[key])
    return orjson.dumps(data)


def decode_chain_message(raw: bytes) -> DepositMessage | RetractionMessage:
    """Parse a deposits-topic message; raise ValueError with the reason if malformed."""
    try:
        return _chain_message.validate_json(raw)
    except ValidationError as exc:
        raise ValueError(f"malformed chain message: {_problems(exc)}") from None


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc']) or 'message'}: {error['msg']}"
        for error in exc.errors(include_url=False, include_input=False)
    )

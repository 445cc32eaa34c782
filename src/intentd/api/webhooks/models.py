"""Request and response shapes of ``/api/v1/webhooks`` (docs/webhooks.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from intentd.api.models import Problem
from intentd.contract.events import EventTypeText
from intentd.contract.mode import Mode

__all__ = [
    "AttemptList",
    "AttemptOut",
    "EndpointList",
    "EndpointOut",
    "Problem",
    "RecoverRequest",
    "Recovered",
    "WebhookCreate",
    "WebhookCreated",
    "WebhookUpdate",
    "body_schema",
]


def _text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


Url = Annotated[
    str,
    Field(min_length=1, max_length=2048, description="https (http for test endpoints only)"),
    AfterValidator(_text),
]
Description = Annotated[str, Field(max_length=512), AfterValidator(_text)]
EventTypes = Annotated[
    list[EventTypeText] | None,
    Field(
        min_length=1,
        max_length=16,
        description="types to receive; null or absent: every type, including future ones",
    ),
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class WebhookCreate(_Request):
    url: Url
    event_types: EventTypes = None
    description: Description = ""


class WebhookUpdate(_Request):
    """Fields to change; absent fields stay as they are."""

    url: Url | None = None
    event_types: EventTypes = None
    description: Description | None = None
    enabled: bool | None = Field(
        default=None, description="false disables (reason client); true re-enables"
    )


class RecoverRequest(_Request):
    since: datetime = Field(
        strict=False, description="RFC 3339 time; events created at or after it"
    )
    until: datetime | None = Field(
        default=None, strict=False, description="events created before it; now"
    )


class EndpointOut(BaseModel):
    id: str
    url: str
    description: str
    event_types: list[str] | None
    mode: Mode
    enabled: bool
    disabled_reason: Literal["gone", "failing", "client"] | None
    disabled_at: str | None
    failing_since: str | None
    previous_secret_expires_at: str | None = Field(
        description="until then the previous secret signs too (after a rotation)"
    )
    created_at: str
    updated_at: str


class WebhookCreated(EndpointOut):
    secret: str = Field(description="whsec_…; shown once, store it")


class EndpointList(BaseModel):
    data: list[EndpointOut]
    next_cursor: str | None


class AttemptOut(BaseModel):
    id: int
    delivery_id: int
    event_id: str
    event_type: str
    delivery_status: Literal["pending", "delivered", "failed"]
    attempted_at: str
    status_code: int | None
    latency_ms: int
    error: str | None
    response: str = Field(description="the first 4 KiB of the answer")
    outcome: Literal["delivered", "retry", "failed", "disabled"]
    next_attempt_at: str | None


class AttemptList(BaseModel):
    data: list[AttemptOut]
    next_cursor: str | None


class Recovered(BaseModel):
    recovered: int


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` declaring ``model`` as the JSON request body."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }

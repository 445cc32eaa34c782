"""A route class whose 405 answer's ``Allow`` lists every method the application serves
on its path, whichever router each operation is in (``GET /intents`` and
``POST /intents`` live in different modules); Starlette's own lists only the first
matching route's. The methods are read from the app's OpenAPI document (built once),
which names every operation of every included router."""

from __future__ import annotations

from typing import Any

from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

__all__ = ["PathMethodsRoute"]


class PathMethodsRoute(APIRoute):
    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.methods and scope["method"] not in self.methods:
            document: dict[str, Any] = scope["app"].openapi()
            operations = document["paths"].get(self.path, {})
            methods = sorted({m.upper() for m in operations} | set(self.methods))
            raise HTTPException(status_code=405, headers={"Allow": ", ".join(methods)})
        await super().handle(scope, receive, send)

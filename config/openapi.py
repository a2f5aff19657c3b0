"""drf-spectacular's schema class for the whole API (a module of its own: DRF settings import
the authentication classes, which import config.problems, so that module must not import AutoSchema)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse

from .problems import _PROBLEM_DESCRIPTIONS, PROBLEM_CONTENT_TYPE, ProblemSerializer


class ProblemAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, declaring the problem+json responses each operation can give
    (401/403 for key-protected operations, 400/413/415 for bodies, 404 for paths with ids).

    Two more truths it states: a request serializer with ``closed = True`` refuses unknown fields
    (``additionalProperties: false``), and every PATCH needs a body (`config.problems.json_object`
    answers a missing one with `empty-body`, even where every field is optional)."""

    def _map_basic_serializer(self, serializer: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and getattr(serializer, "closed", False):
            schema["additionalProperties"] = False
        return schema

    def _get_request_for_media_type(self, serializer: Any, direction: Any = "request") -> tuple[Any, bool]:
        schema, required = super()._get_request_for_media_type(serializer, direction)
        return schema, required or (self.method == "PATCH" and schema is not None)

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        codes: list[str] = []
        if self.get_auth():
            codes += ["401", "403"]
        if self.method in ("POST", "PUT", "PATCH"):
            codes += ["400", "413", "415"]
        if "{" in self.path:
            codes.append("404")
        codes.append("500")
        for code in codes:
            if code not in responses:
                responses[code] = self._get_response_for_code(
                    OpenApiResponse(ProblemSerializer, description=_PROBLEM_DESCRIPTIONS[code]),
                    code,
                    (PROBLEM_CONTENT_TYPE,),
                    direction,
                )
        return responses

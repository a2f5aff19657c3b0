"""drf-spectacular's schema class for the whole API (a module of its own: DRF settings import
the authentication classes, which import config.problems, so that module must not import AutoSchema)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse

from .problems import _PROBLEM_DESCRIPTIONS, PROBLEM_CONTENT_TYPE, ProblemSerializer


class ProblemAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, declaring the problem+json responses each operation can give
    (401/403 for key-protected operations, 400/413/415 for bodies, 404 for paths with ids)."""

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

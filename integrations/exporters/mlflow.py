"""MLflow tracing server (≥ 3.6): OTLP/HTTP protobuf to ``{host}/v1/traces`` with the required
``x-mlflow-experiment-id`` header. MLflow translates the GenAI attributes itself (token usage,
model, provider, request/response previews from ``gen_ai.input/output.messages``)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, ClassVar

from .base import CheckResult, ConfigError
from .configs import Field
from .otlp import OtlpExporter


class MlflowExporter(OtlpExporter):
    platform = "mlflow"
    label = "MLflow"
    fields: ClassVar[tuple[Field, ...]] = (
        Field("host", "base_url", required=True, aliases=("trackingUri",), help="e.g. http://mlflow:5000"),
        Field(
            "experimentId",
            required=True,
            aliases=("projectId",),
            pattern=r"[0-9A-Za-z_\-]{1,64}",
            pattern_hint="must be an MLflow experiment id (letters, digits, - and _)",
        ),
        Field("token", secret=True, help="Bearer token, when the server has auth enabled."),
        Field("username", help="Basic auth user, when the server uses MLflow's basic auth."),
        Field("password", secret=True),
        Field("headers", "headers", default=dict),
        Field("compression", "choice", default="gzip", choices=("gzip", "none")),
    )

    @classmethod
    def validate_config(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = super().validate_config(config)
        if bool(cleaned.get("username")) != bool(cleaned.get("password")):
            raise ConfigError({"password": ["username and password go together"]})
        if cleaned.get("token") and cleaned.get("username"):
            raise ConfigError({"token": ["give a token or a username and password, not both"]})
        return cleaned

    def traces_url(self) -> str:
        return f"{self.config['host']}/v1/traces"

    def auth_headers(self) -> dict[str, str]:
        headers = {"x-mlflow-experiment-id": str(self.config["experimentId"])}
        if self.config.get("token"):
            headers["Authorization"] = f"Bearer {self.config['token']}"
        elif self.config.get("username"):
            pair = f"{self.config['username']}:{self.config['password']}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        return headers

    def check(self) -> CheckResult:
        """Reads the experiment: proves the server, the credentials and the experiment id."""
        return self.probe(
            "GET",
            f"{self.config['host']}/api/2.0/mlflow/experiments/get",
            params={"experiment_id": self.config["experimentId"]},
            headers=self.headers(),
            ok_message=f"MLflow answered and experiment {self.config['experimentId']} exists.",
        )

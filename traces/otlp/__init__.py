"""OTLP/HTTP trace ingest: `POST /api/v1/otlp/v1/traces` (docs/otlp.md).

- `wire`: the request body (Content-Type, gzip with a cap on the decompressed size, protobuf or
  OTLP JSON) and the OTLP responses (`ExportTraceServiceResponse`, `google.rpc.Status`);
- `spans`: protobuf spans to plain values (attributes as dicts, ids as hex);
- `mapping` + `messages`: one span to one trace item of the REST API's shape, a span of its run
  (`run_id` the trace id, `parent_id`, `kind`, `name`), by the GenAI, OpenInference and
  OpenLLMetry conventions, or refused (bad ids);
- `views`: the endpoint; it hands the items to the one ingest write path (`_ingest` there).
"""

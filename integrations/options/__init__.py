"""The settings of every integration kept in its ``config`` beside the platform's own fields:
environments, identity, transformation, quota and response validation (`schema`), and what the
delivery engine does with them before an exporter encodes (`shaping`, `quota`)."""

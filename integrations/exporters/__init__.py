"""One exporter module per platform, behind `base.Exporter`. `registry` maps platform → class."""

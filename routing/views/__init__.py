"""The routing pages of the dashboard (docs/dashboard.md): rules, the dry run, the sampling policy."""

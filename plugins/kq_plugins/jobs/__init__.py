"""Built-in job integrations, one module per kind, each registered through its entry point."""

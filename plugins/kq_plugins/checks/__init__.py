"""Built-in admission-check controllers, one module per ``controllerName``."""

"""Controllers that connect the admission core to the API server through kq/runtime."""

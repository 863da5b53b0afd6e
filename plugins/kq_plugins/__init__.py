"""kq's built-in plugins, each registered through the ``kq`` entry-point group."""

"""``kubectl kq``: kueuectl's verbs and output, on kq's client (the ``kubectl-kq`` script)."""

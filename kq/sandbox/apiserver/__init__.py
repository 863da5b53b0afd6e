"""A Kubernetes-compatible API server that the real kubectl and kubernetes_asyncio accept.

``kq apiserver`` runs it alone (``command.py``); ``server.start(Options, crds)`` runs it inside
another asyncio program.  Layers, bottom up: ``store`` (SQLite + revisions + change log),
``watch`` (fan-out), ``api`` (verbs and object semantics, with ``builtin`` kinds, ``gc`` and
``webhooks``), ``app`` (HTTP: routing, discovery, tables, watch streams, with ``arguments``
reading requests). Before ``app`` serves a request, ``access`` authenticates it (``authn``:
the admin token, ServiceAccount tokens, impersonation) and authorizes it (``rbac``);
``reviews`` answers the review APIs and TokenRequests.
"""

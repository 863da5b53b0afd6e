"""The controller runtime: the only package in kq that talks to the Kubernetes API.

Client, informers, work queues, reconcilers, leader election and the ``kq run`` process.
"""

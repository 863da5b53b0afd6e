"""The simulated cluster: pure reconcile functions for nodes, scheduling, kubelet and job kinds.

Every controller takes plain API dicts plus a clock reading and returns a list of actions
(``actions.py``) that a driver applies, in order, through the API server. Nothing here does I/O.

- ``clock``: accelerated sandbox time; ``apitime``: wall time in the API, sandbox time inside
- ``profiles`` + ``nodes``: node pools and Node objects
- ``node_lifecycle``: heartbeats, simulated failures, condition taints
- ``eviction``: pods on failed nodes (MarkPodsNotReady, taint-manager eviction, pod GC)
- ``scheduling``: pod placement and binding (``nodeaffinity``: node selectors and affinity);
  ``exclusive``: JobSet exclusive-placement affinity
- ``kubelet``: pod phases and container states over time
- ``job_controller`` (+ ``job_pods``, ``job_tracking``, ``pod_failure_policy``),
  ``jobset_controller``
- ``rayjob_controller`` + ``raycluster_controller``, ``mpijob_controller``; ``names``: suffixes
- ``provisioning``: the ProvisioningRequest autoscaler (DWS queued provisioning, check-capacity)
- ``serving``: ``deployment_controller`` + ``replicaset_controller``, ``statefulset_controller``,
  ``lws_controller`` + ``lws_objects`` + ``lws_status``; ``apps``: what they share;
  ``readiness``: when a serving pod turns Ready

``driver`` plays them against an API server (the only I/O): ``kinds`` (what is served),
``writer`` (actions applied, the overlaid view), ``event_sink`` (Events, off the loop's path).
"""

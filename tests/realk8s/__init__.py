"""Ground-truth tests against a real kube-apiserver and etcd (see README.md)."""

"""Typed, immutable views of kueue.x-k8s.io v1beta1 objects, quantities and conditions."""

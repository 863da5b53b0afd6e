"""The admission cycle: flavor assignment, preemption targets, ordering and decisions."""

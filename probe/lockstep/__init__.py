"""lockstep's Python side: the probe that traces a PyTorch program (lockstep.probe)."""

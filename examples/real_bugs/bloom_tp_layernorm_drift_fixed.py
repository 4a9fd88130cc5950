"""Clean control for bloom_tp_layernorm_drift.py: the DataLoader draws from a generator of its own, the
fix of https://github.com/bigscience-workshop/Megatron-DeepSpeed/pull/276."""
import bloom_tp_layernorm_drift as bug

if __name__ == "__main__":
    bug.main(fixed=True)

"""Clean control for tp_dropout_rng_rank0.py: the DataLoader draws from a generator of its own (the fix
of https://github.com/bigscience-workshop/Megatron-DeepSpeed/pull/276), so the TP ranks' dropout masks
agree."""
import tp_dropout_rng_rank0 as bug

if __name__ == "__main__":
    bug.main(fixed=True)

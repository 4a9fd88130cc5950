"""Clean control for fsdp1_hybrid_shard_size1.py: NO_SHARD over the data-parallel dim when the shard
dim has size 1, the fallback of https://github.com/verl-project/verl/pull/7494."""
import fsdp1_hybrid_shard_size1 as bug

if __name__ == "__main__":
    bug.main(fixed=True)

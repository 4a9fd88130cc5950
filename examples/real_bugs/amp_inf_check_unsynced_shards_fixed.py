"""Clean control for amp_inf_check_unsynced_shards.py: found_inf all-reduced before the skip decision,
as fairscale's ShardedGradScaler does (https://github.com/facebookresearch/fairscale/issues/180):
every rank skips step 3 together."""
import amp_inf_check_unsynced_shards as bug

if __name__ == "__main__":
    bug.main(fixed=True)

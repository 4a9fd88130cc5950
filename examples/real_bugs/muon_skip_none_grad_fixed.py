"""Clean control for muon_skip_none_grad.py: a parameter without a gradient gets a zero one, so every
rank makes every all_gather, as upstream Muon does (https://github.com/KellerJordan/Muon/issues/37)."""
import muon_skip_none_grad as bug

if __name__ == "__main__":
    bug.main(fixed=True)

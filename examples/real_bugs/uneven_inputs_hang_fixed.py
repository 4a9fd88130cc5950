"""Clean control for uneven_inputs_hang.py: the loop inside `model.join()`, PyTorch's fix for uneven
inputs (https://github.com/pytorch/pytorch/issues/33148, PR 42577): rank 0 shadows rank 1's fifth
gradient all-reduce with zeros."""
import uneven_inputs_hang as bug

if __name__ == "__main__":
    bug.main(fixed=True)

"""Clean control for plateau_lr_local_loss.py: the scheduler stepped with the all-reduced mean
validation loss, the fix of https://github.com/lucidrains/DALLE-pytorch/issues/268."""
import plateau_lr_local_loss as bug

if __name__ == "__main__":
    bug.main(fixed=True)

"""Clean control for bn_buffers_not_broadcast.py: DDP's default `broadcast_buffers=True`
(https://github.com/open-mmlab/mmdetection/issues/2539)."""
import bn_buffers_not_broadcast as bug

if __name__ == "__main__":
    bug.main(fixed=True)

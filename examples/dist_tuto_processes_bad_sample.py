"""The "Writing Distributed Applications with PyTorch" tutorial's program (dist_tuto_processes.py),
with one unreadable sample in rank 1's partition, the first its loader reads for its fourth batch:
its process dies in step 4. Rank 0's next all-reduce then fails for the lost peer and its process
dies too. Nothing tells the launched process: `multiprocessing.Process` catches what its target
raises, prints it and exits 1, `join()` returns, and the program ends with exit code 0, as if it had
trained. A nightly job that trusts the exit code goes green.

lockstep judges the world the program started (spawning 1): a `crash` of rank 1 in step 4, whose
trace ends without its clean-exit footer, and not of rank 0, whose collective failed after its
peer was lost.
"""
import dist_tuto_processes as tuto

BAD_BATCH = 3  # rank 1's fourth batch of its first epoch: step 4


class UnreadableSample(Exception):
    pass


class WithABadSample(tuto.SyntheticDigits):
    """ The same images, but the `bad_read`-th sample it reads cannot be read. """

    def __init__(self, bad_read):
        super().__init__()
        self.bad_read = bad_read
        self.reads = 0

    def __getitem__(self, i):
        self.reads += 1
        if self.reads == self.bad_read:
            raise UnreadableSample("sample %d: truncated image file" % i)
        return super().__getitem__(i)


def run(rank, size):
    if rank == 1:
        bsz = 128 // size  # partition_dataset's batch size
        tuto.make_dataset = lambda: WithABadSample(bad_read=BAD_BATCH * bsz + 1)
    tuto.run(rank, size)


if __name__ == "__main__":
    tuto.main(run)

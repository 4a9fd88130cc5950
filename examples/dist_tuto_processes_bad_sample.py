"""The "Writing Distributed Applications with PyTorch" tutorial's program (dist_tuto_processes.py),
with one unreadable sample in rank 1's partition: its loader raises at its fourth batch of the first
epoch, and its process dies. Rank 0's next all-reduce then fails for the lost peer and its process
dies too. Nothing tells the launched process: `multiprocessing.Process` catches what its target
raises, prints it and exits 1, `join()` returns, and the program ends with exit code 0, as if it had
trained. A nightly job that trusts the exit code goes green.

lockstep judges the world the program started (spawning 1): a `crash` of rank 1, whose trace ends
without its clean-exit footer, and not of rank 0, whose collective failed after its peer was lost.
"""
import dist_tuto_processes as tuto

BAD_BATCH = 3  # rank 1's fourth batch of its first epoch


class UnreadableSample(Exception):
    pass


class WithABadSample(tuto.SyntheticDigits):
    """ The same images, one of which its loader cannot read. """

    def __getitem__(self, i):
        if i == self.bad:
            raise UnreadableSample("sample %d: truncated image file" % i)
        return super().__getitem__(i)


def make_dataset():
    data = WithABadSample()
    data.bad = -1
    return data


def run(rank, size):
    tuto.make_dataset = make_dataset
    if rank == 1:
        # The first sample of rank 1's fourth batch (the loader's shuffle is seeded: torch.manual_seed).
        import torch

        torch.manual_seed(1234)
        train_set, bsz = tuto.partition_dataset()
        order = list(train_set.sampler)
        partition = train_set.dataset
        bad = partition.index[order[BAD_BATCH * bsz]]

        def make_bad_dataset():
            data = WithABadSample()
            data.bad = bad
            return data

        tuto.make_dataset = make_bad_dataset
    tuto.run(rank, size)


if __name__ == "__main__":
    tuto.main(run)

"""PyTorch's "Writing Distributed Applications with PyTorch" tutorial, its distributed synchronous
SGD re-created: pytorch/tutorials intermediate_source/dist_tuto.rst (BSD-3-Clause). The program
starts its own ranks with `torch.multiprocessing.Process`, one per rank (`init_process`, then
`run`), partitions the dataset (`DataPartitioner`), and averages the gradients itself
(`average_gradients`: an all-reduce of each gradient, divided by the world size), no DDP.

The code is upstream's, in upstream's order. What is adapted to run here, and only that: a
synthetic dataset of 28x28 images in MNIST's shape instead of MNIST (no download), 2 epochs of at
most 8 batches, a free port instead of 29500 (tests run side by side), and the net smaller.

Started as one process, as the tutorial says (`python run.py`):

    lockstep exec --ranks 1 --out runs -- python3 dist_tuto_processes.py

Each rank finds out at init_process_group that the program started it (a process multiprocessing
started, declaring a world of 2 where lockstep launched 1) and records into the spawning's
folder, as a rank of mp.spawn does (docs/CLI.md): one world, its replicas equal; nothing to find.
"""
import os
import socket
from math import ceil
from random import Random

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

EPOCHS = 2
MAX_BATCHES = 8


class Partition(object):
    """ Dataset-like object, but only access a subset of it. """

    def __init__(self, data, index):
        self.data = data
        self.index = index

    def __len__(self):
        return len(self.index)

    def __getitem__(self, index):
        data_idx = self.index[index]
        return self.data[data_idx]


class DataPartitioner(object):
    """ Partitions a dataset into different chuncks. """

    def __init__(self, data, sizes=[0.7, 0.2, 0.1], seed=1234):
        self.data = data
        self.partitions = []
        rng = Random()
        rng.seed(seed)
        data_len = len(data)
        indexes = [x for x in range(0, data_len)]
        rng.shuffle(indexes)

        for frac in sizes:
            part_len = int(frac * data_len)
            self.partitions.append(indexes[0:part_len])
            indexes = indexes[part_len:]

    def use(self, partition):
        return Partition(self.data, self.partitions[partition])


class Net(nn.Module):
    """ Network architecture. """

    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=5)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=5)
        self.fc1 = nn.Linear(128, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.view(-1, 128)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


class SyntheticDigits(torch.utils.data.Dataset):
    """ MNIST's shape (1x28x28 images, 10 classes), made up: no download. """

    def __init__(self, n=1024):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randn(n, 1, 28, 28, generator=g)
        self.labels = torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


def make_dataset():
    return SyntheticDigits()


def partition_dataset():
    """ Partitioning MNIST """
    dataset = make_dataset()
    size = dist.get_world_size()
    bsz = 128 // size
    partition_sizes = [1.0 / size for _ in range(size)]
    partition = DataPartitioner(dataset, partition_sizes)
    partition = partition.use(dist.get_rank())
    train_set = torch.utils.data.DataLoader(partition, batch_size=bsz, shuffle=True)
    return train_set, bsz


def average_gradients(model):
    """ Gradient averaging. """
    size = float(dist.get_world_size())
    for param in model.parameters():
        dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)
        param.grad.data /= size


def run(rank, size):
    """ Distributed Synchronous SGD Example """
    torch.manual_seed(1234)
    train_set, bsz = partition_dataset()
    model = Net()
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.5)

    num_batches = ceil(len(train_set.dataset) / float(bsz))
    for epoch in range(EPOCHS):
        epoch_loss = 0.0
        for i, (data, target) in enumerate(train_set):
            if i == MAX_BATCHES:
                break
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            epoch_loss += loss.item()
            loss.backward()
            average_gradients(model)
            optimizer.step()
        print('Rank ', dist.get_rank(), ', epoch ', epoch, ': ', epoch_loss / num_batches)


def init_process(rank, size, fn, port, backend='gloo'):
    """ Initialize the distributed environment. """
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = str(port)
    dist.init_process_group(backend, rank=rank, world_size=size)
    fn(rank, size)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(fn=run):
    size = 2
    processes = []
    mp.set_start_method("spawn")
    port = free_port()
    for rank in range(size):
        p = mp.Process(target=init_process, args=(rank, size, fn, port))
        p.start()
        processes.append(p)

    for p in processes:
        p.join()


if __name__ == "__main__":
    main()

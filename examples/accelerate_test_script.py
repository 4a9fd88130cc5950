"""Accelerate's own end-to-end test script re-created: huggingface/accelerate
src/accelerate/test_utils/scripts/test_script.py at 16cb6eb8 (Apache-2.0), the script behind
`accelerate test`, started by `accelerate launch` (`lockstep exec --launcher accelerate`).

What it keeps, in upstream's order: a plain `Accelerator()` (no `cpu=True`: on a machine without
a GPU the ranks must still form one world, ACCELERATE_USE_CPU, docs/LAUNCHER.md); the process
execution checks (`main_process_first`, `wait_for_everyone`, `on_main_process`);
`split_between_processes` of a list and a tensor, with and without padding, gathered back with
`gather_object`; RNG synchronization (`synchronize_rng_states` of torch's global RNG and of a
generator, checked with `are_the_same_tensors`); `prepare_data_loader` sharding, checked with
`gather`; the training check: a single-process baseline trained on every rank alone, then the
same regression trained under `accelerator.prepare` (DDP) without and with `split_batches`, with
and without the seedable sampler, and with `mixed_precision="bf16"` (which upstream runs on CPU
too: autocast leaves the model's elementwise ops in fp32), each ending with the distributed model
equal to the baseline; and the breakpoint trigger (`set_trigger` on the main process, seen by all
through an all-reduce). Upstream's collective operations (test_ops.py: `broadcast`,
`pad_across_processes`, `gather` of unequal lengths) are added in one check. What it leaves out:
the custom sampler, central dispatch and seedable-sampler reproducibility checks and the nested
dict and uneven splits (data loading without a new kind of collective), the `datasets` and
`pytest` parts (no downloads) and the GPU-only fp16 checks.

Many models in one program: every training prepares a new model, optimizer and loader, after
optimizer steps of models that are not distributed at all (the baseline). Every rank's replica
stays equal to every other's: lockstep finds nothing.

    lockstep exec --ranks 2 --launcher accelerate --out runs -- python3 accelerate_test_script.py
"""
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from accelerate import Accelerator
from accelerate.data_loader import SeedableRandomSampler, prepare_data_loader
from accelerate.state import AcceleratorState
from accelerate.test_utils import RegressionDataset, RegressionModel, are_the_same_tensors
from accelerate.utils import (DataLoaderConfiguration, broadcast, broadcast_object_list, gather,
                              gather_object, pad_across_processes, set_seed, synchronize_rng_states)

EPOCHS = int(os.environ.get("EXAMPLE_EPOCHS", "3"))  # upstream's 3
ATOL = RTOL = 1e-6  # upstream's, off HPU


def process_execution_check(accelerator):
    # main_process_first: the main process writes first, then the others; one directory for all,
    # made by the main process (upstream uses the working directory).
    where = [tempfile.mkdtemp(prefix="accelerate_test_script.") if accelerator.is_main_process else None]
    broadcast_object_list(where)
    path = os.path.join(where[0], "check_main_process_first.txt")
    with accelerator.main_process_first():
        with open(path, "a+") as f:
            f.write("main\n" if accelerator.is_main_process else "other\n")
    accelerator.wait_for_everyone()
    with open(path) as f:
        lines = f.read().splitlines()
    assert lines[0] == "main" and lines.count("other") == accelerator.num_processes - 1, lines
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        shutil.rmtree(where[0])
    ran = []
    accelerator.on_main_process(lambda: ran.append(accelerator.process_index))()
    assert ran == ([0] if accelerator.is_main_process else []), ran


def split_between_processes_check(state):
    for data in (list(range(2 * state.num_processes)), list(range(2 * state.num_processes - 1))):
        with state.split_between_processes(data, apply_padding=True) as results:
            assert len(results) == 2, (state.process_index, results)
            mine = list(results)
        state.wait_for_everyone()
        assert gather_object(mine)[: len(data)] == data
    data = torch.tensor([[i] for i in range(2 * state.num_processes - 1)])
    with state.split_between_processes(data, apply_padding=True) as results:
        mine = [r.clone() for r in results]
    state.wait_for_everyone()
    assert [t.item() for t in gather_object(mine)[: len(data)]] == data.flatten().tolist()


def rng_sync_check():
    synchronize_rng_states(["torch"])
    assert are_the_same_tensors(torch.get_rng_state()), "RNG states improperly synchronized on CPU."
    generator = torch.Generator()
    synchronize_rng_states(["generator"], generator=generator)
    assert are_the_same_tensors(generator.get_state()), "RNG states improperly synchronized in generator."


def operations_check(state):
    """broadcast, pad_across_processes and gather of unequal lengths (upstream's test_ops.py)."""
    mine = torch.arange(3.0) + 10 * state.process_index
    assert torch.equal(broadcast(mine.clone(), from_process=0), torch.arange(3.0))
    ragged = torch.ones(state.process_index + 1)  # rank r holds r + 1 elements
    padded = pad_across_processes(ragged)
    assert padded.shape == (state.num_processes,) and padded.sum() == state.process_index + 1, padded
    assert gather(padded).sum() == sum(range(1, state.num_processes + 1))


def dl_preparation_check(state):
    length = 32 * state.num_processes
    for shuffle in (False, True):
        for split_batches in (False, True):
            dl = DataLoader(range(length), batch_size=8, shuffle=shuffle)
            dl = prepare_data_loader(dl, state.device, state.num_processes, state.process_index,
                                     put_on_device=True, split_batches=split_batches)
            result = torch.cat([gather(batch) for batch in dl]).tolist()
            assert sorted(result) == list(range(length)) and (shuffle or result == list(range(length)))


def baseline_dataloader(train_set, generator, batch_size, use_seedable_sampler):
    if use_seedable_sampler:
        sampler = SeedableRandomSampler(generator=generator, data_source=train_set, num_samples=len(train_set))
        return DataLoader(train_set, batch_size=batch_size, sampler=sampler)
    return DataLoader(train_set, batch_size=batch_size, shuffle=True, generator=generator)


def train(model, optimizer, loader, backward):
    for _ in range(EPOCHS):
        for batch in loader:
            model.zero_grad()
            loss = torch.nn.functional.mse_loss(model(batch["x"]), batch["y"])
            backward(loss)
            optimizer.step()


def training_check(use_seedable_sampler):
    state = AcceleratorState()
    generator = torch.Generator()
    batch_size = 8
    length = batch_size * 4 * state.num_processes

    # The baseline: every rank alone trains on all the data, a batch as large as all ranks' together.
    set_seed(42)
    generator.manual_seed(42)
    train_set = RegressionDataset(length=length, seed=42)
    old_model = RegressionModel()
    train(old_model, torch.optim.SGD(old_model.parameters(), lr=0.1),
          baseline_dataloader(train_set, generator, batch_size * state.num_processes, use_seedable_sampler),
          lambda loss: loss.backward())
    assert are_the_same_tensors(old_model.a) and are_the_same_tensors(old_model.b), "baselines differ"

    for split_batches, mixed_precision in ((False, "no"), (True, "no"), (False, "bf16")):
        AcceleratorState._reset_state()
        accelerator = Accelerator(mixed_precision=mixed_precision, dataloader_config=DataLoaderConfiguration(
            split_batches=split_batches, use_seedable_sampler=use_seedable_sampler))
        loader = baseline_dataloader(train_set, generator,
                                     batch_size * (state.num_processes if split_batches else 1), use_seedable_sampler)
        model = RegressionModel()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader, model, optimizer = accelerator.prepare(loader, model, optimizer)
        set_seed(42)
        generator.manual_seed(42)
        train(model, optimizer, loader, accelerator.backward)
        model = accelerator.unwrap_model(model).cpu()
        for name in ("a", "b"):
            torch.testing.assert_close(getattr(old_model, name), getattr(model, name), atol=ATOL, rtol=RTOL)
        accelerator.print(f"Training (split_batches={split_batches}, mixed_precision={mixed_precision}, "
                          f"seedable sampler={use_seedable_sampler}) matches the single-process baseline.")


def trigger_check():
    accelerator = Accelerator()
    assert accelerator.check_trigger() is False
    if accelerator.is_main_process:
        accelerator.set_trigger()
    assert accelerator.check_trigger() is True  # an all-reduce: every rank sees the main process's
    assert accelerator.check_trigger() is False


def main():
    accelerator = Accelerator()
    state = accelerator.state
    if state.num_processes < 2 or not dist.is_initialized():
        raise SystemExit("accelerate_test_script: not distributed (%d process): each rank would run alone"
                         % state.num_processes)
    process_execution_check(accelerator)
    split_between_processes_check(state)
    rng_sync_check()
    operations_check(state)
    dl_preparation_check(state)
    training_check(use_seedable_sampler=False)
    training_check(use_seedable_sampler=True)
    trigger_check()
    state.destroy_process_group()


if __name__ == "__main__":
    main()

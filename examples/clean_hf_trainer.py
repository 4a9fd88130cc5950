"""Clean training with the Hugging Face Transformers `Trainer`, the way its documentation writes
it: a model, `TrainingArguments` and `Trainer(...).train()`. The model is a tiny GPT-2 built from
a config in code (no download, no tokenizer: the data are random token ids), on CPU with the
gloo backend. Every rank holds the same weights after every step: lockstep finds nothing.

Run it as any torchrun program: `lockstep exec --ranks 2 --out runs -- python3 clean_hf_trainer.py`.
"""
import os
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

STEPS = int(os.environ.get("EXAMPLE_STEPS", "4"))
BATCH = 4
VOCAB = 64
LENGTH = 16


class RandomTokens(Dataset):
    """Language-modelling samples of random token ids: the labels are the inputs."""

    def __init__(self, size):
        ids = torch.randint(0, VOCAB, (size, LENGTH), generator=torch.Generator().manual_seed(100))
        self.samples = [{"input_ids": row, "labels": row} for row in ids]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        return self.samples[i]


def main():
    config = GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    with tempfile.TemporaryDirectory() as output_dir:
        args = TrainingArguments(
            output_dir=output_dir,
            max_steps=STEPS,
            per_device_train_batch_size=BATCH,
            gradient_accumulation_steps=2,
            learning_rate=1e-3,
            warmup_steps=1,
            max_grad_norm=1.0,
            use_cpu=True,
            ddp_backend="gloo",
            ddp_find_unused_parameters=False,
            report_to="none",
            save_strategy="no",
            disable_tqdm=True,
            seed=0,
        )
        trainer = Trainer(model=model, args=args, train_dataset=RandomTokens(STEPS * 2 * BATCH * world))
        trainer.train()


if __name__ == "__main__":
    main()

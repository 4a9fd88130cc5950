"""tp_mesh_only.py (torch's tensor_parallel_example: init_device_mesh only, Colwise/Rowwise TP)
on 4 ranks, where rank 2 nudges its copy of out_proj's bias after the optimizer step of step 3 (a
debugging hook left in). RowwiseParallel keeps that bias whole on every rank, so all four must
hold the same values; rank 2 no longer does. lockstep's `replica_weights` names out_proj.bias on
rank 2 at step 3 (three ranks agree: a majority), although the program never called
init_process_group itself."""
import torch
import torch.distributed as dist

from tp_mesh_only import build, train

BUG_STEP = 3


def main():
    mesh, model, optimizer = build()

    def after_step(step):
        if dist.get_rank() == 2 and step == BUG_STEP:
            with torch.no_grad():
                model.out_proj.bias.to_local()[0] += 1e-3

    train(mesh, model, optimizer, after_step)


if __name__ == "__main__":
    main()

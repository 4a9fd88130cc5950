"""fabric_language_model.py (Lightning Fabric's language-model example re-created) with
`fabric.clip_gradients` called on rank 0 only, as a rank-0-only guard around clipping (or
logging code that clips) would: rank 0 clips the gradients DDP averaged, rank 1 steps with them
unclipped, so at step 1 the gradients the optimizers step with (`synced_grads`) and then the
weights (`replica_weights`) of decoder.weight and decoder.bias differ. With two ranks there is no
majority and nothing in the records says which side is right, so lockstep names both ranks and
says why; it must never name rank 1 alone, the innocent one (issue 37: the console said
`ranks [1]`)."""
import fabric_language_model

if __name__ == "__main__":
    fabric_language_model.CLIP_RANK0_ONLY = True
    fabric_language_model.main()

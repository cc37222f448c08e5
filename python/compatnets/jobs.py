"""What the package's PyTorch jobs (train, roles, finetune) share: PyTorch imported with a
clear message instead of a traceback when it is missing, the deterministic set-up, images
as tensors, and the command line's ending (the result JSON, or an error naming the cause)."""
import json
import sys

import numpy as np

try:
    import torch
except ImportError as e:  # the message lands in the task's log
    sys.exit(f"error: PyTorch cannot be imported by {sys.executable} ({e}); "
             "install Debian's python3-torch")


def deterministic(seed):
    """Seeds torch, one thread, deterministic kernels; returns a generator seeded alike."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    return torch.Generator().manual_seed(seed)


def as_images(u8):
    """uint8 images (n, 28, 28) as a float tensor (n, 1, 28, 28) in [0, 1]."""
    return torch.from_numpy(u8.astype(np.float32) / 255.0).unsqueeze(1)


def finish(job, args, result_path, errors=(ValueError, OSError, KeyError)):
    """Runs job(args): its result as JSON to `result_path` (if any) and to stdout, exit 0;
    one of `errors` as "error: ..." on stderr, exit 2."""
    try:
        result = job(args)
    except errors as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if result_path:
        with open(result_path, "w") as f:
            json.dump(result, f, allow_nan=False)
    print(json.dumps(result, allow_nan=False))
    return 0

"""Where a CPU encoder's time goes: MiniLM-L6 layer kernels in float32, bfloat16 and int8.

Usage::

    python benchmarks/encoder_kernels.py [--batch 32] [--seq 256] [--reps 7]

`encoder_backends.py` measures whole backends; this script explains where the PyTorch
ones stop (OpenVINO's bfloat16 backend runs attention in bfloat16 too, and passes it). It
times, with the shapes of one all-MiniLM-L6-v2 layer (hidden 384, 12 heads of 32, FFN
1536) on a batch of ``--batch`` sequences of ``--seq`` tokens:

* the layer's matrix products (query, key, value and output projections, the two FFN
  projections) in float32, in bfloat16 (what ``backend="torch-bf16"``'s autocast runs)
  and with PyTorch's dynamic int8 quantization (fbgemm / oneDNN, VNNI);
* its attention, ``scaled_dot_product_attention`` with the flash and the math kernel,
  float32 and bfloat16.

Then it adds them up per layer: a lower bound on the whole model's time that leaves
out layer norms, GELU, embeddings, pooling and tokenisation (the same cost for every
backend), and so an upper bound on the speed-up a backend can reach from these kernels.
Median of ``--reps`` runs after three warm-ups; PyTorch's own thread count. Nothing is
downloaded; no model is loaded. Printed and written to
``benchmarks/results/encoder_kernels.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment_lines, markdown_table, median, write_results  # noqa: E402

HIDDEN, HEADS, FFN = 384, 12, 1536
# (name, in features, out features, how many per layer)
PROJECTIONS = (("query, key, value and output", HIDDEN, HIDDEN, 4), ("FFN up", HIDDEN, FFN, 1),
               ("FFN down", FFN, HIDDEN, 1))


def timed(fn: Callable[[], object], reps: int) -> float:
    """Median milliseconds of ``fn`` over ``reps`` runs, after three warm-ups."""
    for _ in range(3):
        fn()
    runs = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t) * 1000)
    return median(runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    rows = args.batch * args.seq
    lines = [
        "# Encoder kernels: one MiniLM-L6 layer in float32, bfloat16 and int8",
        "",
        f"Batch {args.batch} x {args.seq} tokens, hidden {HIDDEN}, {HEADS} heads, "
        f"FFN {FFN}; torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"median of {args.reps} runs, ms per call (the layer row counts each product as "
        "often as a layer runs it).",
        "",
        *environment_lines(),
        "",
    ]
    warm = torch.randn(rows, HIDDEN)
    timed(lambda: torch.nn.functional.linear(warm, warm[:HIDDEN]), args.reps)  # thread pool, clocks
    table = []
    totals = {"float32": 0.0, "bfloat16": 0.0, "int8 (dynamic)": 0.0}
    for name, n_in, n_out, count in PROJECTIONS:
        x = torch.randn(rows, n_in)
        linear = torch.nn.Linear(n_in, n_out).eval()
        xb, wb, bb = x.bfloat16(), linear.weight.bfloat16(), linear.bias.bfloat16()
        with warnings.catch_warnings():  # torch.ao's eager quantization is deprecated
            warnings.simplefilter("ignore")
            quantized = torch.ao.quantization.quantize_dynamic(
                torch.nn.Sequential(linear), {torch.nn.Linear}, dtype=torch.qint8)
        with torch.inference_mode():
            f32 = timed(lambda: linear(x), args.reps)
            b16 = timed(lambda: F.linear(xb, wb, bb), args.reps)
            i8 = timed(lambda: quantized(x), args.reps)
        for key, value in zip(totals, (f32, b16, i8)):
            totals[key] += count * value
        table.append([f"{name} ({n_in}->{n_out}), x{count} per layer", f"{f32:.1f}", f"{b16:.1f}",
                      f"{i8:.1f}", f"{f32 / b16:.2f}x"])
    shape = (args.batch, HEADS, args.seq, HIDDEN // HEADS)
    q, k, v = (torch.randn(shape) for _ in range(3))
    mask = torch.zeros(args.batch, 1, 1, args.seq)
    attention = {}
    for label, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("math", SDPBackend.MATH)):
        per_dtype = []
        for dtype in (torch.float32, torch.bfloat16):
            qq, kk, vv, mm = (t.to(dtype) for t in (q, k, v, mask))
            with sdpa_kernel([backend]), torch.inference_mode():
                per_dtype.append(timed(
                    lambda: F.scaled_dot_product_attention(qq, kk, vv, attn_mask=mm), args.reps))
        attention[label] = per_dtype
        table.append([f"attention, {label} kernel", f"{per_dtype[0]:.1f}", f"{per_dtype[1]:.1f}",
                      "-", f"{per_dtype[0] / per_dtype[1]:.2f}x"])
    best = [min(a[i] for a in attention.values()) for i in range(2)]
    layer = [totals["float32"] + best[0], totals["bfloat16"] + best[1],
             totals["int8 (dynamic)"] + best[0]]
    table.append(["**layer: products + fastest attention**", f"**{layer[0]:.1f}**",
                  f"**{layer[1]:.1f}**", f"**{layer[2]:.1f}**", f"**{layer[0] / layer[1]:.2f}x**"])
    lines += [markdown_table(["kernel", "float32", "bfloat16", "int8 (dynamic)",
                              "bf16 speed-up"], table)]
    products = totals["float32"] / totals["bfloat16"]
    lines += [
        "",
        f"- Matrix products alone: bfloat16 is {products:.2f}x float32 and dynamic int8 "
        f"{totals['float32'] / totals['int8 (dynamic)']:.2f}x.",
        f"- Attention: bfloat16 is {best[0] / best[1]:.2f}x float32 (fastest kernel each), "
        f"{best[1] / layer[1]:.0%} of the bfloat16 layer.",
        f"- Upper bound on a bfloat16 (int8) encoder's speed-up from these kernels: "
        f"{layer[0] / layer[1]:.2f}x ({layer[0] / layer[2]:.2f}x); the rest of the model "
        "costs every backend the same and lowers it.",
    ]
    print("\n".join(lines))
    write_results("encoder_kernels", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

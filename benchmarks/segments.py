"""Gradients through segment reductions, as a graph network's message passing uses them:
wengert.ops.segment_max and segment_sum against JAX's jax.ops and PyTorch's scatter_reduce.

    python benchmarks/segments.py                      # 7 repeats, the sizes below
    python benchmarks/segments.py --quick              # 3 short repeats, smaller
    python benchmarks/segments.py --json results.json  # also write JSON

One problem per reduction, single-threaded, float64: messages m (20,000 edges x 16
features) reduced into 500 nodes by random node ids, loss ``sum(w * segment_op(m, ids))``,
gradient in m.  For max the gradient routes each node's weight to the edges attaining its
maximum, shared among ties (JAX's rule; PyTorch's ``scatter_reduce(..., 'amax')`` shares
them evenly too).  wengert eager (``wg.grad``) and compiled (``wg.jit``, ids as an
argument); JAX under ``jax.jit`` and eagerly; PyTorch eager.

Every gradient is checked against wengert's before timing (timing.peer_table), and timed
as timing.py does: warm-up, interleaved repeats, medians, ratios paired per repeat.
"""
import platform
import sys

import single_thread  # noqa: F401  (pins the thread pools: before numpy)
import numpy as np

from timing import parser, peer_table, schedule, write_report


def makers(how, edges, nodes, features):
    rng = np.random.default_rng(0)
    m = rng.normal(size=(edges, features))
    ids = rng.integers(0, nodes, size=edges)
    w = rng.normal(size=(nodes, features))

    def wengert(jit=False):
        import wengert as wg
        import wengert.numpy as wnp
        from wengert import ops
        op = getattr(ops, f"segment_{how}")
        if jit:
            grad = wg.jit(wg.grad(lambda m, i: wnp.sum(w * op(m, i, nodes))))
            return wg.__version__, lambda: grad(m, ids)
        grad = wg.grad(lambda m: wnp.sum(w * op(m, ids, nodes)))
        return wg.__version__, lambda: grad(m)

    def jax_(jit):
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        op = getattr(jax.ops, f"segment_{how}")
        grad = jax.grad(lambda m, i: jnp.sum(w * op(m, i, nodes)))
        grad = jax.jit(grad) if jit else grad
        return jax.__version__, lambda: np.asarray(jax.block_until_ready(grad(m, ids)))

    def torch_():
        import torch
        tm, tw = torch.tensor(m), torch.tensor(w)
        index = torch.tensor(ids)[:, None].expand(edges, features)
        reduce = {"max": "amax", "sum": "sum"}[how]
        start = torch.full((nodes, features), -torch.inf if how == "max" else 0.0,
                           dtype=torch.float64)

        def grad():
            tm.grad = None
            tm.requires_grad_(True)
            out = start.scatter_reduce(0, index, tm, reduce=reduce, include_self=True)
            # (an empty node's -inf times its weight: the loss is masked there, as below)
            (torch.where(torch.isfinite(out), out, 0.0) * tw).sum().backward()
            return tm.grad.numpy()
        return torch.__version__, grad, "scatter_reduce, eager"

    return {"wengert": wengert, "wengert-jit": lambda: wengert(jit=True),
            "jax-jit": lambda: jax_(True), "jax-eager": lambda: jax_(False), "torch": torch_}


def main(argv=None):
    ap = parser(__doc__, "smaller problems (4,000 edges into 100 nodes), 3 short repeats")
    args = ap.parse_args(argv)
    repeats, min_time = schedule(args)
    edges, nodes, features = (4_000, 100, 16) if args.quick else (20_000, 500, 16)
    print(f"Python {platform.python_version()}, single-threaded, float64")
    report = {how: peer_table(how, f"segment_{how} of {edges} x {features} messages into "
                              f"{nodes} nodes, gradient in the messages",
                              makers(how, edges, nodes, features), repeats, min_time,
                              tolerance=1e-12)
              for how in ("max", "sum")}
    if args.json:
        write_report(args.json, "segments", args.quick, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

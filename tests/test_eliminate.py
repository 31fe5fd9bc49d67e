"""Seed 003: the edge-partial graph, contractible subgraphs, umbrellas found with dominator
trees, contraction, and Jacobians by vertex elimination -- against brute force, against
jacfwd and against finite differences."""
import itertools

import numpy as np
import pytest

import wengert as wg
import wengert.math as wm
from fd import fd_gradient, assert_close
from wengert.codegen.count import count_ops
from wengert.ad.edges import EdgeGraph, linearize
from wengert.ad.eliminate import eliminate, estimate, eliminated_entries
from wengert.ad.umbrella import (S, T, closed_umbrellas, contract, copy_variables, decompose,
                                 dominator_trees, ends, is_contractible, umbrella_family,
                                 umbrellas)


# ---- seed 003's example ----------------------------------------------------------------------
CHAIN = 12


def g_chain(v):
    """g: a long scalar chain (2 operations per step)."""
    for _ in range(CHAIN):
        v = wm.sin(v) * 0.9
    return v


def seed_f(x1, x2):
    v1 = x1 * x2
    v2 = g_chain(v1)
    return x1 * v2, x2 * v2


def test_seed_example_finds_g_as_a_closed_umbrella():
    g = wg.trace(seed_f, 0.7, 1.3)
    G = linearize(g, g.inputs, g.outputs)
    (cu,) = closed_umbrellas(G)
    v1, v2 = g.nodes[cu.input], g.nodes[cu.output]
    assert v1.op.name == "mul" and set(v1.args) == set(g.inputs)          # v1 = x1*x2
    assert {u.op.name for u in g.users_of(v2)} == {"mul"} and len(g.users_of(v2)) == 2
    assert len(cu.interior) == 2 * CHAIN - 1                               # g's interior
    assert {g.nodes[i].op.name for i in cu.interior} == {"sin", "mul"}
    # as an umbrella with copied variables it is the same set, rooted at v2
    (umb,) = umbrellas(G)
    assert umb.root == cu.output and umb.vertices == cu.vertices and not umb.copied


def test_seed_example_contraction_keeps_the_jacobian():
    x = (0.7, 1.3)
    g = wg.trace(seed_f, *x, abstract=False)
    G = linearize(g, g.inputs, g.outputs).map_labels(lambda c: c if type(c) is float else c.value)
    (cu,) = closed_umbrellas(G)
    H, gain = contract(G, [cu.edges(G)])
    assert H.succs[cu.input] == {cu.output: H.label(cu.input, cu.output)}    # one edge v1 -> v2
    assert gain == 2 * CHAIN - 1 and G.num_edges() - H.num_edges() == gain
    eliminate(H, H.intermediates())
    expected = wg.jacfwd(seed_f, argnums=(0, 1))(*x)
    got = H.jacobian_entries()
    assert_close([[got[i, j] for j in range(2)] for i in range(2)], expected, rtol=1e-13)


def test_seed_example_elimination_beats_both_modes_by_a_fifth():
    c = wg.jacobian_costs(seed_f, 0.7, 1.3, argnums=(0, 1))
    t = {m: c[m]["total"] for m in c}
    assert t["eliminate"] <= 0.8 * min(t["fwd"], t["rev"])


# ---- Propositions 3.1 and 4.1 against brute force ----------------------------------------------
def random_dag(seed, nv=7, p=0.35):
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(nv) for j in range(i + 1, nv) if rng.random() < p]
    return EdgeGraph.from_edges(edges)


def dags(count, max_edges=11):
    found, seed = [], 0
    while len(found) < count:
        G = random_dag(seed)
        seed += 1
        if 2 <= G.num_edges() <= max_edges:
            found.append(G)
    return found


def subsets(edges):
    for r in range(len(edges) + 1):
        yield from itertools.combinations(edges, r)


def test_proposition_3_1_contractible_iff_union_of_components():
    for G in dags(12):
        comps = decompose(G)
        assert sorted(e for c in comps for e in c) == sorted(G.edges())
        index = {e: k for k, c in enumerate(comps) for e in c}
        for sub in subsets(G.edges()):
            chosen = set(sub)
            union = all(set(comps[index[e]]) <= chosen for e in chosen)
            assert is_contractible(G, chosen) == union


def _dominates(idom, a, b):
    """Whether a dominates b, walking b's immediate dominators."""
    while True:
        if b == a:
            return True
        if b not in idom:
            return False
        b = idom[b]


def test_proposition_4_1_closed_umbrellas_from_dominator_trees():
    for G in dags(12):
        idom, ipdom = dominator_trees(G)
        nxt = {u: v for v, u in idom.items() if ipdom.get(u) == v}     # T↑↓'s edges
        closed = set()                                                  # brute force: (a)
        for sub in subsets(G.edges()):
            if sub and is_contractible(G, sub):
                xs, fs = ends(G, sub)
                if len(xs) == 1 and len(fs) == 1:
                    closed.add((xs[0], fs[0]))
        for u, v in itertools.permutations(G.vertices(), 2):
            b = _dominates(idom, u, v) and _dominates(ipdom, v, u)       # (b)
            w = u                                                       # (c): u -> v in T↑↓
            while w in nxt and w != v:
                w = nxt[w]
            assert ((u, v) in closed) == b == (w == v), (G.edges(), u, v)
        # the maximal ones are the closed umbrellas no other one contains
        found = closed_umbrellas(G, idom, ipdom)
        spans = {(u, v): {w for w in G.vertices() if _dominates(idom, u, w)
                          and _dominates(ipdom, v, w)} for u, v in closed}
        maximal = {p for p in closed if not any(spans[p] < spans[q] for q in closed)}
        assert {(c.input, c.output) for c in found} == maximal
        assert all(c.vertices == spans[c.input, c.output] for c in found)


def test_proposition_4_2_umbrellas_with_copies():
    for G in dags(30, max_edges=20):
        found = umbrellas(G)
        H, family = umbrella_family(G, found)
        for u, edges in zip(found, family):
            assert is_contractible(H, edges)
            xs, fs = ends(H, edges)
            assert fs == [u.root]                                       # one output: an umbrella
        seen = [v for u in found for v in u.vertices]
        assert len(seen) == len(set(seen))                              # disjoint
        rng = np.random.default_rng(len(G.rank))
        labelled = G.map_labels(lambda c: float(rng.uniform(.5, 2)))
        H, family = umbrella_family(labelled, found)
        C, gain = contract(H, family)
        assert gain >= 0                                                # Δ ≥ 0 for umbrellas
        eliminate(C, C.intermediates())
        ref = labelled.copy()
        eliminate(ref, ref.intermediates())
        assert C.jacobian_entries().keys() == ref.jacobian_entries().keys()
        for k, v in ref.jacobian_entries().items():
            assert C.jacobian_entries()[k] == pytest.approx(v, rel=1e-12)


def test_copy_variables_inserts_w_between_u_and_v():
    G = EdgeGraph.from_edges([("u", "v", 3.0), ("u", "f", 2.0), ("v", "f", 1.0)])
    H, made = copy_variables(G, [("u", "v")])
    w = made["u", "v"]
    assert H.label("u", w) == 1.0 and H.label(w, "v") == 3.0 and "v" not in H.succs["u"]
    assert H.rank["u"] < H.rank[w] < H.rank["v"]


def test_contract_refuses_what_is_not_contractible():
    G = EdgeGraph.from_edges([("x", "a"), ("a", "f"), ("x", "f")])
    with pytest.raises(ValueError, match="not contractible"):
        contract(G, [[("x", "a")]])


def test_dominator_trees_of_the_extended_graph():
    G = EdgeGraph.from_edges([("x", "a"), ("y", "a"), ("a", "f"), ("a", "h")])
    idom, ipdom = dominator_trees(G)
    assert idom["x"] == S and idom["a"] == S and idom["f"] == "a"
    assert ipdom["x"] == "a" and ipdom["a"] == T


# ---- every mode equals jacfwd on random functions, and finite differences -------------------------
UNARY = [wm.sin, wm.cos, wm.exp, wm.tanh, lambda v: v * v, lambda v: 1.5 * v, lambda v: -v,
         lambda v: v / (1 + v * v), wm.atan]
BINARY = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b,
          lambda a, b: a / (2 + b * b), wm.atan2]


def random_function(seed, n, m, steps=14):
    """A random straight-line program of n scalars returning m of its values."""
    rng = np.random.default_rng(seed)
    prog = []
    for k in range(steps):
        if rng.random() < 0.5:
            prog.append((UNARY[rng.integers(len(UNARY))], int(rng.integers(n + k))))
        else:
            prog.append((BINARY[rng.integers(len(BINARY))], int(rng.integers(n + k)),
                         int(rng.integers(n + k))))
    outs = [int(i) for i in rng.integers(0, n + steps, m)]

    def f(*xs):
        vals = list(xs)
        for op, *args in prog:
            vals.append(op(*[vals[a] for a in args]))
        return tuple(vals[i] for i in outs)
    return f


CASES = [(seed, 1 + seed % 4, 1 + (seed // 4) % 4) for seed in range(60)]


@pytest.mark.parametrize("mode", ["fwd", "rev", "eliminate", "sparse", "auto"])
def test_every_mode_equals_jacfwd(mode):
    rng = np.random.default_rng(1)
    for seed, n, m in CASES:
        f = random_function(seed, n, m)
        x = tuple(rng.uniform(-1, 1, n))
        argnums = tuple(range(n))
        expected = np.array(wg.jacfwd(f, argnums=argnums)(*x))
        got = wg.jacobian(f, argnums=argnums, mode=mode)(*x)
        assert_close(got, expected, rtol=1e-12, atol=1e-14)
        graph = wg.jacobian_graph(f, *x, argnums=argnums, mode=mode)     # the symbolic path
        assert_close(graph(*x), expected, rtol=1e-12, atol=1e-14)


def test_eliminate_matches_finite_differences():
    rng = np.random.default_rng(2)
    for seed, n, m in CASES[:20]:
        f = random_function(seed, n, m)
        x = tuple(rng.uniform(-1, 1, n))
        J = wg.jacobian(f, argnums=tuple(range(n)), mode="eliminate")(*x)
        for i in range(m):
            fd = fd_gradient(lambda *xs: f(*xs)[i], x)
            assert_close(J[i], fd, rtol=1e-5, atol=1e-6)


def test_markowitz_order_is_the_cheapest_vertex_at_every_step():
    """The heap keeps keys current as neighbours change: its order must be the plain
    definition, recomputing every remaining vertex's key before each step."""
    from wengert.ad.eliminate import _markowitz, eliminate_vertex
    for seed, n, m in CASES[:40]:
        g = wg.trace(random_function(seed, n, m, steps=30), *([0.5] * n))
        G = linearize(g, g.inputs, g.outputs)
        H = G.copy()
        H.log = []
        eliminate(H, H.intermediates())
        expected, todo, ref = [], set(G.intermediates()), G.copy()
        while todo:
            v = min(todo, key=lambda v: (_markowitz(ref, v), ref.rank[v]))
            expected.append(("eliminate", v))
            eliminate_vertex(ref, v)
            todo.discard(v)
        assert H.log == expected
        assert set(H.edges()) == set(ref.edges())


def test_markowitz_does_not_fill_a_ladder(monkeypatch):
    """a, b = sin(a*b), a + b for 300 steps: each sum is free to eliminate (its partials
    are 1), but eliminating them all first joined every later step to every earlier one
    (46,000 edges from 1,500).  Counting the edges a vertex can add keeps the graph no
    larger than it started, and the operations within 1.5 times forward mode's (they
    were 60 times: the edges filled in cost multiplications later)."""
    import wengert.ad.eliminate as E

    def ladder(x, y):
        a, b = x, y
        for _ in range(300):
            a, b = wm.sin(a * b), a + b
        return a, b
    g = wg.trace(ladder, 0.3, 0.4)
    G = linearize(g, g.inputs, g.outputs)
    T = G.map_labels(E.Tally().token)
    edges = lambda H: sum(len(s) for s in H.succs.values())
    start, peak = edges(T), []
    eliminate_vertex = E.eliminate_vertex
    monkeypatch.setattr(E, "eliminate_vertex", lambda H, j: eliminate_vertex(H, j) or
                        peak.append(edges(H)))
    E.eliminate(T, T.intermediates(), "markowitz")
    assert len(peak) == len(G.intermediates()) and max(peak) <= start
    est = estimate(G, ["markowitz", "forward"])
    assert sum(est["markowitz"].values()) <= 1.5 * sum(est["forward"].values())


def test_eliminated_entries_with_each_named_strategy():
    from wengert.ad.eliminate import STRATEGIES
    rng = np.random.default_rng(4)
    for seed, n, m in CASES[:15]:
        f = random_function(seed, n, m)
        x = tuple(rng.uniform(-1, 1, n))
        expected = np.array(wg.jacfwd(f, argnums=tuple(range(n)))(*x)).reshape(m, n)
        g = wg.trace(f, *x, abstract=False)
        for name in STRATEGIES:
            numeric = eliminated_entries(g, g.inputs, g.outputs, symbolic=False, strategy=name)
            symbolic = eliminated_entries(g, g.inputs, g.outputs, strategy=name)
            for entries in (numeric, {k: wg.value(v) for k, v in symbolic.items()}):
                got = np.zeros((m, n))
                for (i, j), v in entries.items():
                    got[i, j] = v
                assert_close(got, expected, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="unknown elimination strategy 'nope'.*markowitz"):
        eliminated_entries(g, g.inputs, g.outputs, strategy="nope")


def test_elimination_never_costs_more_than_forward_or_reverse():
    rng = np.random.default_rng(3)
    for seed, n, m in CASES[:30]:
        f = random_function(seed, n, m)
        x = tuple(rng.uniform(-1, 1, n))
        c = wg.jacobian_costs(f, *x, argnums=tuple(range(n)))
        assert c["eliminate"]["total"] <= min(c["fwd"]["total"], c["rev"]["total"]), seed
        g = wg.trace(f, *x)
        est = estimate(linearize(g, g.inputs, g.outputs))
        best = min(sum(e.values()) for e in est.values())
        assert best <= min(sum(est["forward"].values()), sum(est["reverse"].values()))


def test_elimination_on_broyden_is_no_worse_than_reverse_mode():
    def broyden(x):
        n = len(x)
        return [(3 - 2 * x[i]) * x[i] - (x[i - 1] if i else 0)
                - 2 * (x[i + 1] if i < n - 1 else 0) + 1 for i in range(n)]
    c = wg.jacobian_costs(broyden, [0.5] * 30)
    # reverse order reuses the function's 2*x: only the real graph sees that
    assert c["eliminate"]["total"] <= min(c["fwd"]["total"], c["rev"]["total"])


# ---- composition, layouts, errors ----------------------------------------------------------------
def test_layout_and_pytrees_follow_jacfwd():
    f = lambda p, s: {"a": p["u"] * s, "b": [wm.sin(p["v"]), p["u"] + p["v"]]}
    args = ({"u": 0.5, "v": -1.5}, 2.0)
    for argnums in (0, (0, 1)):
        expected = wg.jacfwd(f, argnums=argnums)(*args)
        for mode in ("eliminate", "auto", "rev"):
            assert wg.jacobian(f, argnums=argnums, mode=mode)(*args) == expected


def test_nested_elimination_is_differentiable():
    def s(x, y):
        J = wg.jacobian(seed_f, argnums=(0, 1), mode="eliminate")(x, y)
        return J[0][0] * J[1][1] - J[0][1] * J[1][0]           # det of the Jacobian

    def s_ref(x, y):
        J = wg.jacfwd(seed_f, argnums=(0, 1))(x, y)
        return J[0][0] * J[1][1] - J[0][1] * J[1][0]

    assert_close(wg.grad(s, argnums=(0, 1))(0.7, 1.3), wg.grad(s_ref, argnums=(0, 1))(0.7, 1.3),
                 rtol=1e-12)
    H = wg.jacobian(wg.grad(lambda x, y: x * x * wm.sin(y), argnums=(0, 1)), argnums=(0, 1),
                    mode="eliminate")(1.0, 2.0)
    assert_close(H, wg.hessian(lambda x, y: x * x * wm.sin(y), argnums=(0, 1))(1.0, 2.0))


def test_outputs_that_are_inputs_or_feed_other_outputs():
    f = lambda x, y: (x, x * y, wm.sin(x * y), 3.0, y > 0)
    x = (0.4, -0.3)
    expected = wg.jacfwd(f, argnums=(0, 1))(*x)
    assert wg.jacobian(f, argnums=(0, 1), mode="eliminate")(*x) == expected
    graph = wg.trace(f, *x)
    entries = eliminated_entries(graph, graph.inputs, graph.outputs)
    assert set(entries) == {(0, 0), (1, 0), (1, 1), (2, 0), (2, 1)}


def test_jacobian_graph_and_costs_of_a_graph():
    g = wg.trace(seed_f, 0.7, 1.3)
    J = wg.jacobian_graph(g)
    assert len(g.outputs) == 2                                   # the given graph is unchanged
    assert_close(J(0.7, 1.3), wg.jacfwd(seed_f, argnums=(0, 1))(0.7, 1.3), rtol=1e-13)
    n_nodes = len(g.nodes)
    assert wg.jacobian_costs(g) == wg.jacobian_costs(seed_f, 0.7, 1.3, argnums=(0, 1))
    assert len(g.nodes) == n_nodes


def test_arrays_fall_back_to_sweeps_and_eliminate_says_why():
    f = lambda v: wm.sin(v) * v
    x = np.array([0.1, 0.2, 0.3])
    assert_close(wg.jacobian(f)(x), wg.jacfwd(f)(x))
    with pytest.raises(NotImplementedError, match="scalar graphs"):
        wg.jacobian(f, mode="eliminate")(x)
    with pytest.raises(ValueError, match="mode must be one of"):
        wg.jacobian(f, mode="cross-country")


def test_long_chains_need_no_recursion():
    def f(x, y):
        v = x * y
        for _ in range(3000):
            v = wm.sin(v)
        return v * x, v * y

    J = wg.jacobian(f, argnums=(0, 1), mode="eliminate")(0.3, 0.4)
    assert_close(J, wg.jacfwd(f, argnums=(0, 1))(0.3, 0.4), rtol=1e-12)


def test_past_the_rewrite_budget_candidates_are_compared_as_built(monkeypatch):
    # the emitter's rewriting costs ~0.3 ms per node and candidate: a long chain's
    # jacobian_graph took minutes on it alone
    import wengert.ad.eliminate as E
    asked = []
    real = E.count_ops
    monkeypatch.setattr(E, "count_ops", lambda *a, **k: asked.append(k["rewrite"]) or
                        real(*a, **k))
    def f(x, y):
        for _ in range(8):
            x = wm.sin(x) * 0.5 + y
        return x * y, x - y
    g = wg.trace(f, 0.3, 0.2)
    for budget, rewrite in ((10**6, True), (10, False)):
        monkeypatch.setattr(E, "REWRITE_BUDGET", budget)
        asked.clear()
        jg = wg.jacobian_graph(g)
        assert asked and set(asked) == {rewrite}
        assert_close(np.ravel(jg(0.7, -0.4)), np.ravel(wg.jacfwd(
            f, argnums=(0, 1))(0.7, -0.4)), rtol=1e-13)


def test_wengert_count_reports_jacobian_modes_side_by_side(tmp_path, capsys):
    from wengert.cli import main
    prog = tmp_path / "seed003.adds"
    prog.write_text("v := x1*x2; w := v;\n"
                    + "".join("w := sin(w)*0.9;\n" for _ in range(10))
                    + "f1 := x1*w; f2 := x2*w; x := vec(x1, x2); f := vec(f1, f2);\n"
                    + "count(x) f;\n")
    assert main(["count", "--jacobian", str(prog)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: int(line.split()[-1]) for line in out.splitlines()
            if line.strip().split()[:1] in (["fwd"], ["rev"], ["eliminate"])}
    assert set(rows) == {"fwd", "rev", "eliminate"}
    assert rows["eliminate"] < min(rows["fwd"], rows["rev"])


def test_compiled_jacobian_by_elimination_is_cheaper_and_equal():
    def f(x1, x2):
        v = x1 * x2
        for _ in range(10):
            v = wg.math.sin(v) * 0.9
        return x1 * v, x2 * v
    costs = {}
    for mode in ("fwd", "rev", "eliminate"):
        c = wg.compile(wg.jacobian(f, argnums=(0, 1), mode=mode), 0.4, 0.7)
        costs[mode] = sum(c.count().values())
        np.testing.assert_allclose(np.array(c(0.4, 0.7)),
                                   np.array(wg.jacfwd(f, argnums=(0, 1))(0.4, 0.7)),
                                   rtol=1e-13)
    assert costs["eliminate"] < min(costs["fwd"], costs["rev"])


# ---- real functions through complex values ----------------------------------------------------
def wave(a, w):
    """Re(a e^{iw}) and |a e^{iw} + 2|: real results of complex values, real at the end."""
    z = a * wg.numpy.exp(1j * w)
    return wg.numpy.real(z), wg.numpy.abs(z + 2.0)


def real_part_on_the_way(a, w):
    """Re(i·Im(e^{iw}))·a + w = w: a real value (Im) computed from complex ones feeds a
    product with i, so its derivative must be made real first (its real part)."""
    wnp = wg.numpy
    return wnp.real(1j * wnp.imag(wnp.exp(1j * w))) * a + w


def test_real_outputs_of_complex_values_are_real_parts_of_the_path_sums():
    import warnings
    x = (0.7, 0.3)
    want = wg.jacfwd(wave, argnums=(0, 1))(*x)
    exact = ((np.cos(0.3), -0.7 * np.sin(0.3)),)
    assert_close(want[0], exact[0], rtol=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no ComplexWarning: no cast drops a part)
        for mode in ("eliminate", "auto"):
            J = wg.jacobian(wave, argnums=(0, 1), mode=mode)(*x)
            assert all(type(e) is float for row in J for e in row)
            assert_close(J, want, rtol=1e-14)
        assert_close(wg.jacobian_graph(wave, *x, argnums=(0, 1))(*x), want, rtol=1e-14)
    fd = [fd_gradient(lambda a, w, k=k: wave(a, w)[k], x) for k in range(2)]
    assert_close(want, fd, rtol=1e-7)


def test_a_real_part_taken_on_the_way_is_refused_by_elimination_and_swept_by_auto():
    x = (0.7, 0.3)
    with pytest.raises(NotImplementedError, match=r"\(imag\) is a real value computed from "
                                                  r"complex ones"):
        wg.jacobian(real_part_on_the_way, argnums=(0, 1), mode="eliminate")(*x)
    graph = wg.trace(real_part_on_the_way, *x)
    with pytest.raises(NotImplementedError, match="real value computed from complex ones"):
        eliminated_entries(graph, graph.inputs, graph.outputs)
    # the function is w: ∂/∂a = 0, ∂/∂w = 1
    assert wg.jacobian(real_part_on_the_way, argnums=(0, 1))(*x) == (0.0, 1.0)
    assert wg.jacobian_graph(real_part_on_the_way, *x, argnums=(0, 1), mode="auto")(*x) == \
        (0.0, 1.0)
    assert_close(fd_gradient(real_part_on_the_way, x), [0.0, 1.0], atol=1e-9)


def test_costs_of_a_jacobian_that_is_identically_zero_are_zero():
    # no entry is a node: count_ops([]) counted every node of the function (QA)
    f = lambda x, y: wm.sin(y) * wm.exp(y) + wm.cos(y)
    costs = wg.jacobian_costs(f, 1.0, 2.0, argnums=0)
    assert costs["function"]["total"] == 5
    assert all(costs[m]["total"] == 0 for m in ("fwd", "rev", "eliminate"))
    g = lambda x: (lambda y: y - y)(wm.sin(x) * wm.exp(x))
    assert all(c["total"] == 0 for c in wg.jacobian_costs(g, 1.0).values())


def test_jacobian_graph_entries_of_scalars_are_numbers_in_every_mode():
    # a reverse sweep through an array took its entries out as 0-d arrays
    import wengert.numpy as wnp
    f = lambda x, y: (x * y, wm.sin(wnp.sum(wnp.stack([x, y]) * wnp.array([2.0, 0.5]))))
    want = wg.jacrev(f, argnums=(0, 1))(0.5, 2.0)
    for mode in ("fwd", "rev", "sparse"):
        got = wg.jacobian_graph(f, 0.5, 2.0, argnums=(0, 1), mode=mode)(0.5, 2.0)
        for row_got, row_want in zip(got, want):
            for a, b in zip(row_got, row_want):
                assert np.ndim(a) == 0 and not isinstance(a, np.ndarray), (mode, a)
                assert_close(a, b, rtol=1e-14)


def test_jacobian_graph_and_costs_of_an_array_graph_go_by_sweeps():
    # a traced graph of array code was refused with a message about nesting (QA); it is
    # now differentiated as a function of its inputs
    import wengert.numpy as wnp
    f = lambda x, y: (wnp.sin(x) * x[::-1] * y, wnp.sum(x) * y)
    x = np.array([0.3, -1.2, 2.0])
    g = wg.trace(f, x, 2.0)
    want = wg.jacfwd(f, argnums=(0, 1))(x, 2.0)
    for mode in ("fwd", "rev", "sparse"):
        got = wg.jacobian_graph(g, mode=mode)(x, 2.0)
        for row_got, row_want in zip(got, want):
            for a, b in zip(row_got, row_want):
                assert_close(a, b, rtol=1e-13)
    costs = wg.jacobian_costs(g, modes=("fwd", "rev"))
    one = wg.trace(wg.jacobian(f, argnums=(0, 1), mode="rev"), x, 2.0)
    assert costs["rev"]["total"] == sum(count_ops(one, one.outputs).values()) > 0
    assert wg.jacobian_costs(f, x, 2.0, argnums=1, modes=("fwd",))["fwd"]["total"] > 0
    with pytest.raises(NotImplementedError, match="elimination works on scalar graphs"):
        wg.jacobian_graph(g, mode="eliminate")
    # the default modes leave elimination out for array code, intermediates included
    # (they asked for it and raised, on any array code)
    assert set(wg.jacobian_costs(g)) == {"function", "fwd", "rev"}
    h = lambda x, y: wnp.sum(wnp.stack([x, y]) ** 2)
    assert set(wg.jacobian_costs(h, 0.5, 2.0, argnums=(0, 1))) == {"function", "fwd", "rev"}
    with pytest.raises(NotImplementedError, match="elimination works on scalar graphs"):
        wg.jacobian_costs(g, modes=("eliminate",))


def test_format_costs_keeps_columns_apart_for_large_counts():
    costs = {"function": {"add": 20000, "mul": 3, "total": 20003},
             "fwd": {"add": 99995, "mul": 139994, "total": 239989}}
    lines = wg.format_costs(costs).splitlines()
    assert [line.split() for line in lines] == [
        ["mode", "add", "mul", "total"], ["function", "20000", "3", "20003"],
        ["fwd", "99995", "139994", "239989"]]
    assert len({len(line) for line in lines}) == 1          # right-aligned columns


def test_a_gradient_is_eliminated_in_linear_work(monkeypatch):
    # forward order on a gradient joins every input to every partial sum: n² products by
    # 1, free, so its count tied with reverse order's n and it was run to the end and then
    # built for real (3.2 M graph operations at n = 2,500: 13 s where jacrev takes 0.3 s).
    # Graph operations are counted here, deterministically, in place of time.
    from wengert.graph.graph import Graph
    n = 1500
    f = lambda x: sum(x[i] * x[i + 1] for i in range(len(x) - 1))
    calls = [0]
    apply = Graph.apply

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return apply(self, *args, **kwargs)

    monkeypatch.setattr(Graph, "apply", counted)
    g = wg.jacobian_graph(f, [0.5] * n)
    assert calls[0] < 30 * n, calls[0]
    x = np.linspace(-1, 1, n)
    assert_close(np.array(g(list(x))), np.array(wg.jacrev(f)(list(x))))
    est = estimate(_gradient_graph(f, n), budget=True)
    assert "forward" not in est and "reverse" in est


def _gradient_graph(f, n):
    g = wg.trace(f, [0.5] * n)
    return linearize(g, g.inputs, g.outputs)


def test_jacobian_graph_takes_array_code_by_default():
    # the default was mode="eliminate", which refuses array code, though the docs say a
    # graph with arrays is differentiated by sweeps; "auto" eliminates scalar code (the
    # same graph as before) and sweeps arrays
    import wengert.numpy as wnp
    x = np.array([0.3, -1.2, 2.0])
    want = np.diag(np.cos(x))
    assert_close(wg.jacobian_graph(wnp.sin, x)(x), want)
    assert_close(wg.jacobian_graph(wg.trace(wnp.sin, x))(x)[0][0], want)
    f = lambda a, b: (a * wm.sin(b), wm.exp(a * b))
    assert str(wg.jacobian_graph(f, 1.0, 2.0, argnums=(0, 1))) == \
        str(wg.jacobian_graph(f, 1.0, 2.0, argnums=(0, 1), mode="eliminate"))


def test_format_costs_of_nothing_says_so():
    # a bare StopIteration before (next() of no rows)
    with pytest.raises(ValueError, match="no costs to format"):
        wg.format_costs({})

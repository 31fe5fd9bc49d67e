"""Contractible subgraphs, umbrellas and their contraction (seed 003, Murota & Kubota).

A subgraph G' = (V', E') of the edge-partial graph is *contractible* when, at every vertex
v, either none or all of v's out-edges are in E', and either none or all of v's in-edges
are.  (This is the reading under which the paper's Proposition 3.1 and its own example
hold; the printed conditions pair δ⁺ with δ⁻.)  Then every path from an input X(G') of G'
to an output F(G') of G' stays inside G', so the path products between them can be summed
once -- *contracting* G' -- and reused by every row and column of the Jacobian.  The gain is
Δ = edges removed − edges added; it is never negative for an *umbrella* (one output), and a
*closed umbrella* has one input and one output.

Here, as graph-to-graph operations on an `EdgeGraph`:

- `decompose`: the finest decomposition into contractible subgraphs, the components of the
  relation "two edges share a head or share a tail" (Proposition 3.1), in O(|E|);
- `dominator_trees`: immediate dominators from a source s before the inputs and immediate
  post-dominators from a sink t after the outputs (networkx);
- `closed_umbrellas`: the maximal closed umbrellas, from the paths of T↑↓ (Proposition 4.1);
- `umbrellas`, `copy_variables`: the maximal umbrellas when variables may be copied
  (``w := u`` on an edge), from the post-dominator tree (Proposition 4.2);
- `contract`: contract a family of edge-disjoint contractible subgraphs, returning the new
  graph and the gain Δ.
"""
from __future__ import annotations

from dataclasses import dataclass

from .edges import EdgeGraph

S, T = "<s>", "<t>"          # the source and sink of G*: names no vertex can have


def _networkx():
    try:
        import networkx
    except ImportError:                                           # pragma: no cover
        raise ImportError("umbrellas are found with dominator trees from networkx: "
                          "pip install networkx") from None
    return networkx


# --------------------------------------------------------------------------------------
# contractible subgraphs (section 2, Proposition 3.1)
# --------------------------------------------------------------------------------------
def ends(G: EdgeGraph, edges):
    """(X(G'), F(G')) of the subgraph spanned by `edges`: its vertices with no in-edge in
    it and those with no out-edge in it, each in topological order."""
    edges = set(edges)
    heads = {v for _, v in edges}
    tails = {u for u, _ in edges}
    order = G.rank.__getitem__
    return (sorted(tails - heads, key=order), sorted(heads - tails, key=order))


def is_contractible(G: EdgeGraph, edges) -> bool:
    """Whether the subgraph spanned by `edges` is contractible: at every vertex, none or
    all of its out-edges are in it, and none or all of its in-edges.

    Example:
        >>> from wengert.ad.edges import EdgeGraph
        >>> from wengert.ad.umbrella import is_contractible
        >>> G = EdgeGraph.from_edges([("x", "a"), ("a", "b"), ("b", "f"), ("x", "f")])
        >>> is_contractible(G, [("a", "b")]), is_contractible(G, [("x", "a")])
        (True, False)
    """
    edges = set(edges)
    for v in {w for e in edges for w in e}:
        for around in ([(v, w) for w in G.succs[v]], [(u, v) for u in G.preds[v]]):
            inside = sum(e in edges for e in around)
            if inside and inside != len(around):
                return False
    return True


def decompose(G: EdgeGraph) -> list[list]:
    """The finest decomposition of G into contractible subgraphs: the connected components
    of the relation "two edges share a tail or share a head" (Proposition 3.1).  A
    subgraph is contractible exactly when its edges are a union of these components.

    Each component is a list of edges (u, v).  O(|E|): the edges join "the out-edges of u"
    to "the in-edges of v", and the components of that bipartite graph are the answer.

    Example:
        >>> from wengert.ad.edges import EdgeGraph
        >>> from wengert.ad.umbrella import decompose
        >>> G = EdgeGraph.from_edges([("x", "a"), ("x", "b"), ("a", "f"), ("b", "f"),
        ...                           ("f", "g")])
        >>> decompose(G)
        [[('x', 'a'), ('x', 'b')], [('a', 'f'), ('b', 'f')], [('f', 'g')]]
    """
    nx = _networkx()
    B = nx.Graph()
    for u, v in G.edges():
        B.add_edge(("out", u), ("in", v))
    comps = []
    for c in nx.connected_components(B):
        tails = {w for side, w in c if side == "out"}
        comps.append([(u, v) for u in tails for v in G.succs[u]])
    rank = G.rank.__getitem__
    for comp in comps:
        comp.sort(key=lambda e: (rank(e[0]), rank(e[1])))
    comps.sort(key=lambda comp: (rank(comp[0][0]), rank(comp[0][1])))
    return comps


# --------------------------------------------------------------------------------------
# dominator trees and closed umbrellas (section 4, Proposition 4.1)
# --------------------------------------------------------------------------------------
def extended(G: EdgeGraph):
    """G* as a networkx DiGraph: G plus a source S before every input and a sink T after
    every output."""
    nx = _networkx()
    D = nx.DiGraph()
    D.add_nodes_from([S, T])
    D.add_nodes_from(G.rank)
    D.add_edges_from(G.edges())
    D.add_edges_from((S, x) for x in G.inputs)
    D.add_edges_from((f, T) for f in G.outputs)
    return D


def dominator_trees(G: EdgeGraph, dominators=True, post_dominators=True):
    """(idom, ipdom): the immediate dominator of every vertex of G* from S (every path from
    S to v passes idom[v]) and its immediate post-dominator towards T (every path from v
    to T passes ipdom[v]).  S and T themselves have no entry.  Either tree can be left out
    (None) when it is not needed.

    Example:
        >>> from wengert.ad.edges import EdgeGraph
        >>> from wengert.ad.umbrella import dominator_trees
        >>> G = EdgeGraph.from_edges([("x", "a"), ("a", "b"), ("b", "f"), ("x", "f")])
        >>> idom, ipdom = dominator_trees(G)
        >>> idom["b"], ipdom["a"], ipdom["x"]
        ('a', 'b', 'f')
    """
    nx = _networkx()
    D = extended(G)
    idom = dict(nx.immediate_dominators(D, S)) if dominators else None
    ipdom = dict(nx.immediate_dominators(D.reverse(copy=False), T)) if post_dominators else None
    for tree, root in ((idom, S), (ipdom, T)):
        if tree is not None:
            tree.pop(root, None)    # older networkx maps the root to itself
    return idom, ipdom


@dataclass
class ClosedUmbrella:
    """A maximal closed umbrella: one input, one output, and the vertices between them
    (every vertex on a path from `input` to `output`, both included)."""
    input: object
    output: object
    vertices: set

    @property
    def interior(self) -> set:
        return self.vertices - {self.input, self.output}

    def edges(self, G: EdgeGraph) -> list:
        return [(u, v) for u in self.vertices - {self.output} for v in G.succs[u]]


def closed_umbrellas(G: EdgeGraph, idom=None, ipdom=None) -> list[ClosedUmbrella]:
    """The maximal closed umbrellas of G that have edges (Proposition 4.1).

    u and v bound a closed umbrella exactly when v is dominated by u and u is
    post-dominated by v; those pairs are the directed paths of T↑↓, the tree edges that the
    dominator tree and the post-dominator tree share.  T↑↓ without S and T is a set of
    disjoint paths, each giving the closed umbrella from its first vertex to its last; the
    maximal ones are those that do not lie inside another (a path can run within the
    interior of another's umbrella).  The maximal ones are disjoint, so they can all be
    contracted.

    Example (seed 003's: v1 = x1·x2; v2 = g(v1); f1 = x1·v2; f2 = x2·v2):
        >>> import wengert as wg
        >>> from wengert.ad.edges import linearize
        >>> from wengert.ad.umbrella import closed_umbrellas
        >>> def f(x1, x2):
        ...     v1 = x1 * x2
        ...     v2 = wg.math.exp(wg.math.sin(wg.math.cos(v1)))    # g: a chain
        ...     return x1 * v2, x2 * v2
        >>> g = wg.trace(f, 1.0, 2.0)
        >>> [(g.nodes[u.input], g.nodes[u.output].op.name, len(u.interior))
        ...  for u in closed_umbrellas(linearize(g, g.inputs, g.outputs))]
        [(<Node %2: f64[] mul>, 'exp', 2)]
    """
    if idom is None:
        idom, ipdom = dominator_trees(G)
    nxt = {}
    for v, u in idom.items():
        if u != S and v != T and ipdom.get(u) == v:
            nxt[u] = v
    starts = set(nxt) - set(nxt.values())
    found = []
    for u in sorted(starts, key=G.rank.__getitem__):
        v = u
        while v in nxt:
            v = nxt[v]
        found.append(ClosedUmbrella(u, v, _between(G, u, v)))
    # A path can lie inside another's umbrella (a chain within a chain): not maximal.
    inner = set().union(*(c.interior for c in found))
    return [c for c in found if c.input not in inner]


def _between(G: EdgeGraph, u, v) -> set:
    """The vertices on some path from u to v (u and v included)."""
    top = G.rank[v]
    ahead = {u}
    stack = [u]
    while stack:
        w = stack.pop()
        for z in G.succs[w]:
            if z not in ahead and G.rank[z] <= top:
                ahead.add(z)
                stack.append(z)
    behind = {v}
    stack = [v]
    while stack:
        w = stack.pop()
        for z in G.preds[w]:
            if z in ahead and z not in behind:
                behind.add(z)
                stack.append(z)
    return behind


# --------------------------------------------------------------------------------------
# umbrellas with copies of variables (Proposition 4.2)
# --------------------------------------------------------------------------------------
@dataclass
class Umbrella:
    """A maximal umbrella when variables may be copied: the vertices V_k post-dominated by
    `root` (a child of T in the post-dominator tree), and the edges S_k from outside V_k
    into vertices that also have predecessors inside V_k, which must be copied
    (``w := u``) for V_k plus the copies to be an umbrella."""
    root: object
    vertices: set
    copied: list


def umbrellas(G: EdgeGraph, ipdom=None) -> list[Umbrella]:
    """The maximal umbrellas of G when variables may be copied (Proposition 4.2).

    The components V_k of the post-dominator tree without T are the vertices whose every
    path to the outputs passes one vertex r_k (the component's root); the vertices U_k of
    V_k with predecessors both inside and outside V_k need their outside in-edges S_k
    copied.  After `copy_variables`, each V_k with its copies W_k induces an umbrella with
    output r_k.  Components that are a single vertex are left out.

    Example:
        >>> from wengert.ad.edges import EdgeGraph
        >>> from wengert.ad.umbrella import umbrellas
        >>> G = EdgeGraph.from_edges([("x", "a"), ("y", "a"), ("a", "b"), ("y", "b"),
        ...                           ("b", "f"), ("y", "g")])
        >>> [(u.root, sorted(u.vertices), u.copied) for u in umbrellas(G)]
        [('f', ['a', 'b', 'f', 'x'], [('y', 'a'), ('y', 'b')])]
    """
    if ipdom is None:
        ipdom = dominator_trees(G)[1]
    comp = {}
    for v in reversed(G.topological()):         # a vertex's ipdom comes after it
        p = ipdom[v]
        comp[v] = v if p == T else comp[p]
    members = {}
    for v, r in comp.items():
        members.setdefault(r, set()).add(v)
    found = []
    for r in sorted(members, key=G.rank.__getitem__):
        Vk = members[r]
        if len(Vk) < 2:
            continue
        copied = []
        for v in sorted(Vk, key=G.rank.__getitem__):
            preds = G.preds[v]
            outside = [u for u in preds if u not in Vk]
            if outside and len(outside) < len(preds):
                copied += [(u, v) for u in outside]
        found.append(Umbrella(r, Vk, copied))
    return found


def copy_variables(G: EdgeGraph, edges, inplace=False):
    """Ḡ: G with every edge e = (u, v) of `edges` replaced by u -> w -> v through a copy
    w := u (Fig. 2 of seed 003): e'' = (u, w) labelled 1.0, e' = (w, v) with e's label.
    Returns (Ḡ, {e: w}); Ḡ is G itself, changed, with ``inplace=True``.

    Example:
        >>> from wengert.ad.edges import EdgeGraph
        >>> from wengert.ad.umbrella import copy_variables
        >>> G = EdgeGraph.from_edges([("u", "v", 3.0)])
        >>> H, w = copy_variables(G, [("u", "v")])
        >>> H.edges(), H.label(w["u", "v"], "v")
        ([('u', ('copy', 1)), (('copy', 1), 'v')], 3.0)
    """
    H = G if inplace else G.copy()
    edges = list(edges)
    if H.log is not None:
        H.log.append(("copy", edges))
    made = {}
    for u, v in edges:
        c = H.succs[u][v]
        H.remove_edge(u, v)
        w = H.fresh_vertex(H.rank[v] - 0.5)      # just before v: still topological
        H.add_edge(u, w, 1.0)
        H.add_edge(w, v, c)
        made[u, v] = w
    return H, made


def umbrella_family(G: EdgeGraph, found=None, inplace=False):
    """(Ḡ, family): the graph with the variables of every maximal umbrella copied, and the
    edge sets of those umbrellas in Ḡ, ready for `contract`."""
    if found is None:
        found = umbrellas(G)
    H, made = copy_variables(G, [e for u in found for e in u.copied], inplace)
    family = []
    for u in found:
        inside = set(u.vertices) | {made[e] for e in u.copied}
        family.append([(a, b) for a in inside for b in H.succs[a] if b in inside])
    return H, family


# --------------------------------------------------------------------------------------
# contraction
# --------------------------------------------------------------------------------------
def contract(G: EdgeGraph, family, check=True, inplace=False):
    """Contract each subgraph of `family` (edge lists of edge-disjoint contractible
    subgraphs): its interior vertices (those with in- and out-edges in it) are eliminated,
    which leaves one edge u -> v, labelled with the sum of the path products, for every
    input u and output v of the subgraph joined by a path.  Returns (new graph, Δ) with
    Δ = edges removed − edges added, summed over the family.  With ``inplace=True`` the
    new graph is G itself, changed.

    The interior of an umbrella is eliminated in reverse topological order (each vertex
    then has the umbrella's output as its one successor: reverse mode inside it), that of
    a subgraph with one input in topological order (forward mode inside it), any other by
    the Markowitz rule.

    Example (x -> a -> b -> f is a closed umbrella; contracting it leaves x -> f):
        >>> from wengert.ad.edges import EdgeGraph
        >>> from wengert.ad.umbrella import contract
        >>> G = EdgeGraph.from_edges([("x", "a", 2.0), ("a", "b", 3.0), ("b", "f", 5.0)])
        >>> H, gain = contract(G, [G.edges()])
        >>> H.edges(), H.label("x", "f"), gain
        ([('x', 'f')], 30.0, 2)
    """
    from .eliminate import eliminate
    H = G if inplace else G.copy()
    seen = set()
    gain = 0
    for edges in family:
        edges = list(edges)
        if check:
            if seen.intersection(edges):
                raise ValueError("the subgraphs of a family to contract must not share edges")
            if not is_contractible(H, edges):
                raise ValueError(f"the subgraph with edges {edges[:4]}... is not "
                                 "contractible")
            seen.update(edges)
        xs, fs = ends(H, edges)
        inside = {w for e in edges for w in e}
        interior = inside - set(xs) - set(fs)
        order = ("reverse" if len(fs) == 1 else "forward" if len(xs) == 1 else "markowitz")
        eliminate(H, interior, order)
        added = sum(1 for x in xs for f in fs if f in H.succs[x])
        gain += len(edges) - added
    return H, gain

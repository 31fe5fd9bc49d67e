"""Helpers for the ADDS tests: run a program, evaluate its graph numerically, take
finite differences of its source function."""
import io

import numpy as np

from wengert.adds import Session


def run(program, session=None):
    """(session, output text) after running `program`."""
    out = io.StringIO()
    session = session or Session(stdout=out, stderr=io.StringIO())
    session.stdout = out
    session.execute(program)
    return session, out.getvalue()


def code(session, statement, fortran=False):
    """The text one outcode/count statement prints, in the chosen format."""
    out = io.StringIO()
    session.stdout, session.fort = out, fortran
    session.execute(statement)
    return out.getvalue()


def values(session, name, env):
    """The numbers of variable `name` when the inputs take the values in `env`
    ((NAME, index) -> float), by evaluating the graph itself."""
    var = session.variables[name.upper()]
    nodes = list(var.reshape(-1))
    vals = {}
    for node in session.graph.live_nodes(nodes):
        if node.is_const:
            vals[node.index] = node.value
        elif not node.args:
            sym = session.symbols[node.index]
            vals[node.index] = env[(sym.name, sym.index)]
        else:
            vals[node.index] = node.op.evaluate([vals[a.index] for a in node.args],
                                                node.params)
    return np.array([vals[n.index] for n in nodes]).reshape(var.shape)


def random_env(session, rng, low=-1.0, high=1.0, ranges=None):
    """A random value for every input of the session's graph."""
    env = {}
    for i, sym in session.symbols.items():
        lo, hi = (ranges or {}).get(sym.name, (low, high))
        env[(sym.name, sym.index)] = float(rng.uniform(lo, hi))
    return env


def input_keys(session, name):
    """The (NAME, index) keys of the inputs a variable holds, in order."""
    by_node = {i: (s.name, s.index) for i, s in session.symbols.items()}
    return [by_node[n.index] for n in session.variables[name.upper()].reshape(-1)]


def fd_jacobian(session, f, x, env, h=1e-6):
    """∂f/∂x by central differences of the graph of f; shape f ++ x."""
    keys = input_keys(session, x)
    cols = []
    for k in keys:
        up, dn = dict(env), dict(env)
        up[k] += h
        dn[k] -= h
        cols.append((values(session, f, up) - values(session, f, dn)) / (2 * h))
    fshape = session.variables[f.upper()].shape
    return np.stack(cols, axis=-1).reshape(fshape + session.variables[x.upper()].shape)


def outputs(env, session, name):
    """The values an evaluation of emitted code assigned to variable `name`."""
    name = name.upper()
    shape = session.variables[name].shape
    return np.array([env[(name, tuple(j + 1 for j in i))] for i in np.ndindex(*shape)]
                    ).reshape(shape)

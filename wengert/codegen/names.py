"""Safe names for generated code.

Everything a user can name — a function, its parameters, dict keys of a pytree, the inputs
of a graph, a custom primitive — may end up naming something in generated code.  No such
text is ever pasted in as it is: `Names.user` turns it into an identifier made only of
letters, digits and ``_``, that is no keyword or builtin of the target language, that
never starts with ``_`` (the generated code's own names all do, so the two can never
collide), and that is unique.  So no user text can inject code.

Example:
    >>> n = Names()
    >>> n.user("x"), n.user("x"), n.user("import os; os.system('rm -rf /')"), n.user("_np")
    ('x', 'x_1', 'import_os_os_system_rm_rf', 'np')
    >>> n.own("k"), n.own("k")
    ('_k0', '_k1')
"""
from __future__ import annotations

import builtins
import keyword
import re

#: Words a C compiler reserves, and the names the generated C uses.
C_RESERVED = frozenset("""auto break case char const continue default do double else enum
    extern float for goto if inline int long register restrict return short signed sizeof
    static struct switch typedef union unsigned void volatile while main in out wg_max wg_min
    wg_sign wg_relu bool true false NAN INFINITY""".split()) | frozenset(
    "sqrt cbrt exp log log10 log1p expm1 sin cos tan asin acos atan atan2 sinh cosh tanh "
    "fabs pow fmax fmin".split())

PYTHON_RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(
    dir(builtins))


class Names:
    """Hands out names that cannot collide: ``user(text)`` for names derived from user
    text, ``own(stem)`` for the generated code's own (``_k0``, ``_k1``, ...).  The two kinds
    cannot meet: own names start with ``_``, user names never do."""

    def __init__(self, reserved=PYTHON_RESERVED):
        self.reserved = reserved
        self.taken = set()
        self._counts = {}
        self._suffixes = {}     # base -> the last suffix tried (a pytree 1000 deep has 1000
        #                         labels alike in their first 32 characters: no rescans)

    def user(self, text) -> str:
        # Leading underscores are stripped, so user names never look like the code's own.
        base = re.sub(r"[^0-9A-Za-z_]+", "_", str(text)).strip("_")[:32].rstrip("_") or "v"
        if base[0].isdigit() or base in self.reserved:
            base = "v_" + base
        k = self._suffixes.get(base, 0)
        name = f"{base}_{k}" if k else base
        while name in self.taken or name in self.reserved:
            k += 1
            name = f"{base}_{k}"
        self._suffixes[base] = k
        self.taken.add(name)
        return name

    def fork(self) -> "Names":
        """Names for one more function in the same namespace: user names start afresh (they
        are local variables), the code's own names stay unique across all of them."""
        other = Names(self.reserved)
        other._counts = self._counts
        return other

    def own(self, stem) -> str:
        k = self._counts.get(stem, 0)
        self._counts[stem] = k + 1
        return f"_{stem}{k}"

"""The one kind of error a mistake in an ADDS program raises, and how it is shown.

A mistake is reported as ``file:line:column: error: message``, then the source line with a
caret under the spot, like a compiler does.  The interpreter attaches the position of the
innermost construct that failed; code that raises does not need to know it.
"""
from __future__ import annotations


# characters that break a line on a terminal or in str.splitlines, but not in ADDS; and
# the bytes that are not UTF-8 (lone surrogates, which standard error writes as 6
# characters, "\udce9", so that the caret stood under the wrong one), shown as "?"
_BLANKS = str.maketrans({**dict.fromkeys("\r\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "),
                         **dict.fromkeys(map(chr, range(0xDC80, 0xDD00)), "?")})


class AddsError(Exception):
    """A mistake in an ADDS program: syntax, types, names, indices, files.

    Attributes:
        message: what is wrong, in one sentence.
        filename, line, column: where (1-based; None until the interpreter knows).
        source: the text of the whole input the position refers to.

    Example:
        >>> e = AddsError("cannot add [2] and [3]").at("f.adds", "f := a + b;", 1, 8)
        >>> print(e)
        f.adds:1:8: error: cannot add [2] and [3]
            f := a + b;
                   ^
    """

    def __init__(self, message, filename=None, source=None, line=None, column=None):
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.source = source
        self.line = line
        self.column = column

    @property
    def located(self) -> bool:
        return self.line is not None

    def at(self, filename, source, line, column) -> "AddsError":
        """Attach a position (once: the innermost position stays).  Returns self."""
        if not self.located:
            self.filename, self.source, self.line, self.column = filename, source, line, column
        return self

    def __str__(self):
        if not self.located:
            return f"error: {self.message}"
        head = f"{self.filename}:{self.line}:{self.column}: error: {self.message}"
        # Lines end at \n alone, as positions count them (str.splitlines also ends one at
        # \f, \v, \x85, U+2028, ..., so it showed a line other than the one named); those
        # characters are shown as blanks, and bytes that are not UTF-8 as "?", so the
        # caret stays under its column.
        lines = (self.source or "").split("\n")
        if not 1 <= self.line <= len(lines):
            return head
        text = lines[self.line - 1].expandtabs(1).translate(_BLANKS)
        return f"{head}\n    {text}\n    {' ' * (self.column - 1)}^"

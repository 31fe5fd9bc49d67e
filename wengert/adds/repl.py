"""The interactive ADDS session behind ``wengert repl``.

Lines are collected until they end a statement (a ``;`` outside strings and ``%``
comments), so a statement may span lines; then everything collected runs.  A mistake is
reported and the session goes on, with the graph as it was before the failing statement.
On a terminal, readline gives line editing and a history kept in ``~/.wengert_history``.
"""
from __future__ import annotations

import os
import sys

from .interpreter import source_text
from .parser import COMMENT_STATEMENT

PROMPT = "adds> "
MORE = "  ... "
HISTORY = os.path.join(os.path.expanduser("~"), ".wengert_history")


def complete(text: str) -> bool:
    """Whether `text` ends with a finished statement: a ``;`` outside strings and comments
    with nothing but blanks and comments after it.  A ``comment`` statement runs to the
    next ``;`` whatever it holds (``"`` and ``%`` too), as the grammar reads it.  A string
    left open at a line's end is finished too: a string cannot span lines, so no line
    after it can mend the statement, and running it now reports the mistake where it is
    (waiting for the closing ``"`` swallowed the rest of the session).

    Example:
        >>> complete("f := x;"), complete("f := x"), complete('write ";"'), complete("x; % ;")
        (True, False, False, True)
        >>> complete('comment say "hi;'), complete("comment 50% done;")
        (True, True)
        >>> complete('write "oops;\\n')
        True
    """
    # done: nothing but blanks and comments since the last ";", i.e. at a statement's start
    done, in_string, in_comment, in_statement_comment = True, False, False, False
    for i, ch in enumerate(text):
        if in_comment:
            in_comment = ch != "\n"
        elif in_string:
            if ch == "\n":
                return True
            in_string = ch != '"'
        elif in_statement_comment:
            if ch == ";":
                in_statement_comment, done = False, True
        elif done and COMMENT_STATEMENT.match(text, i):
            in_statement_comment, done = True, False
        elif ch == '"':
            in_string, done = True, False
        elif ch == "%":
            in_comment = True
        elif ch == ";":
            done = True
        elif not ch.isspace():
            done = False
    return done and not in_string and not in_statement_comment


def _piped_lines(stdin):
    """The lines of piped input, without their ends, read as a file is read
    (`source_text`): as bytes where the stream has them, so that a byte that is not UTF-8
    is an error where it stands rather than a traceback, and a lone CR ends a line."""
    for chunk in getattr(stdin, "buffer", stdin):
        if isinstance(chunk, bytes):
            text = source_text(chunk)
        else:
            text = chunk.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        yield from lines[:-1] if text.endswith("\n") else lines


def _setup_readline():
    try:
        import readline
    except ImportError:                    # not on every platform; input() still works
        return None
    try:
        readline.read_history_file(HISTORY)
    except OSError:
        pass
    return readline


def repl(session, stdin=None, interactive=None) -> int:
    """Read statements from `stdin` and run them in `session` until end of input.  Prompts
    are shown on a terminal only, so piped output is just the session's output.  Returns 0.

    Example:
        >>> import io
        >>> from wengert.adds import Session
        >>> s = Session(stderr=sys.stdout)
        >>> repl(s, io.StringIO("f := x*\\n x;\\nf := vec(x, x);\\ncount(x) f;\\n"))
        <stdin>:3:6: error: F has type [], the value assigned has type [2]
            f := vec(x, x);
                 ^
        % COUNT: ADDITIONS/SUBTRACTIONS 0, MULTIPLICATIONS 1, DIVISIONS 0, FUNCTION CALLS 0, POWERS 0
        0
    """
    stdin = stdin if stdin is not None else sys.stdin
    if interactive is None:
        interactive = stdin.isatty()
    readline = _setup_readline() if interactive else None
    piped = None if interactive else _piped_lines(stdin)
    buffer, first_line, line_no = "", 1, 0
    try:
        while True:
            prompt = MORE if buffer else PROMPT
            try:
                if interactive:
                    line = input(prompt)
                else:
                    line = next(piped, None)
                    if line is None:
                        raise EOFError
            except KeyboardInterrupt:          # Ctrl-C drops the statement being typed
                print(file=session.stderr)
                buffer = ""
                continue
            except EOFError:
                if interactive:
                    print(file=session.stderr)
                break
            line_no += 1
            if not buffer:
                first_line = line_no
                if not line.strip():
                    continue
            buffer += line + "\n"
            if not complete(buffer):
                continue
            # Blank lines in front keep line numbers in messages those of the session.
            text, buffer = "\n" * (first_line - 1) + buffer, ""
            def report(error):
                print(error, file=session.stderr)
            # Only a failing statement is lost, not the others on its line, even if it is
            # a syntax error (the whole line was dropped with one): `report` gets them all.
            try:
                session.execute(text, "<stdin>", on_error=report)
            except KeyboardInterrupt:          # Ctrl-C stops a statement that takes long
                print("interrupted: the statement running was undone, and the rest of its "
                      "line did not run", file=session.stderr)
        if buffer.strip():
            print("error: the input ended in the middle of a statement (a ';' is missing?)",
                  file=session.stderr)
    finally:
        if readline is not None:
            try:
                readline.write_history_file(HISTORY)
            except OSError:
                pass
    return 0

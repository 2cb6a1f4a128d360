"""The console the CLI prints its output on: laid out for the terminal it writes to, or,
when stdout is a pipe or a file, unwrapped and with tables as wide as their cells."""

from __future__ import annotations

import sys

from rich.align import AlignMethod
from rich.console import Console
from rich.rule import Rule
from rich.style import Style
from rich.text import TextType

# Piped or redirected output has no width to fit, and rich would assume 80 columns:
# lines broken there and table cells cut (`0.00720…`) can be neither read nor grepped.
# A table takes only the columns its cells need, so at this width none is ever cut.
UNBOUNDED_WIDTH = 100_000
# What a rule (`quickstart`'s headings) spans when the console has no width to span.
RULE_WIDTH = 80


def is_tty() -> bool:
    """Whether stdout is a terminal (looked up when asked: the CLI's tests swap it)."""
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


class CliConsole(Console):
    """stdout's console. Until ``configure`` runs it is rich's own; the root command
    configures it for each command line, from ``--width`` and whether stdout is a
    terminal."""

    unbounded = False

    def configure(self, width: int | None) -> None:
        """On a terminal: its width (rich's behaviour), or ``width``. Otherwise no line
        is wrapped (soft wrap), and tables are laid out at ``width``, or at the width
        their cells need when it is None.

        Set in full each time: one process (a test's) runs many command lines."""
        piped = not is_tty()
        self.soft_wrap = piped
        self.unbounded = piped and width is None
        # None: rich reads the terminal's size (or COLUMNS) at each print.
        self._width = UNBOUNDED_WIDTH if self.unbounded else width

    def rule(self, title: TextType = "", *, characters: str = "─",
             style: str | Style = "rule.line", align: AlignMethod = "center") -> None:
        # A rule fills the console's width: an unbounded one would be 100,000 dashes.
        self.print(Rule(title, characters=characters, style=style, align=align),
                   width=RULE_WIDTH if self.unbounded else None)

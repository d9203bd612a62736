"""Bash `$(( ))` arithmetic with bash's signed 64-bit wrap-around: numbers, variables,
+ - * / % **, comparisons, logic, bit operations, ?:, parentheses. Assignments are refused here:
generator/reading/shell/setters.py applies them (evaluated or made unknown) before asking for a value."""

from __future__ import annotations

from collections.abc import Callable

from generator.base.safe_regex import lazy_pattern

_TOKEN = lazy_pattern(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z@_]+|[0-9]+)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>\*\*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()<>!~&|^?:]))"
)


class ArithError(ValueError):
    pass


_MASK = (1 << 64) - 1


def wrap64(value: int) -> int:
    """Two's-complement wrap to a signed 64-bit integer, as bash's intmax_t does."""
    value &= _MASK
    return value - (1 << 64) if value >> 63 else value


def _number(text: str) -> int:
    if text.startswith(("0x", "0X")):
        return int(text, 16)
    if "#" in text:
        base, digits = text.split("#", 1)
        return int(digits, int(base))
    if len(text) > 1 and text.startswith("0"):
        return int(text, 8)
    return int(text)


def tokenize(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    token = _TOKEN()
    while pos < len(text):
        m = token.match(text, pos)
        if not m or m.end() == pos:
            raise ArithError(f"cannot read arithmetic at {text[pos:pos + 10]!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
    return out


_BINARY = [
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
    ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
]


def evaluate(text: str, lookup: Callable[[str], int]) -> int:
    """Evaluate `text`; `lookup(name)` returns a variable's integer value or raises ArithError."""
    tokens = tokenize(text)
    if not tokens:
        return 0
    parser = _Parser(tokens, lookup)
    result = parser.ternary()
    if parser.pos != len(tokens):
        raise ArithError(f"unexpected {tokens[parser.pos][1]!r}")
    return result


class _Parser:
    """Recursive descent over one expression's tokens, by precedence. A class rather than
    closures inside evaluate: closures that call each other form a reference cycle, which
    kept every evaluation (and, through `lookup`, the whole evaluator) alive until the cycle
    collector ran."""

    def __init__(self, tokens: list[tuple[str, str]], lookup: Callable[[str], int]) -> None:
        self.tokens = tokens
        self.lookup = lookup
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ArithError("unexpected end of arithmetic")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def ternary(self) -> int:
        cond = self.binary(0)
        if self.peek() == "?":
            self.take()
            yes = self.ternary()
            if self.take()[1] != ":":
                raise ArithError("expected ':'")
            no = self.ternary()
            return yes if cond else no
        return cond

    def binary(self, level: int) -> int:
        if level == len(_BINARY):
            return self.power()
        left = self.binary(level + 1)
        while self.peek() in _BINARY[level] and self.tokens[self.pos][0] == "op":
            op = self.take()[1]
            right = self.binary(level + 1)
            left = wrap64(_apply(op, left, right))
        return left

    def power(self) -> int:
        base = self.unary()
        if self.peek() == "**":
            self.take()
            exponent = self.power()
            if exponent < 0:
                raise ArithError("exponent less than 0")
            return wrap64(pow(base, exponent, 1 << 64))
        return base

    def unary(self) -> int:
        tok = self.peek()
        if tok in ("-", "+", "!", "~") and self.tokens[self.pos][0] == "op":
            self.take()
            value = self.unary()
            return wrap64({"-": -value, "+": value, "!": int(not value), "~": ~value}[tok])
        return self.atom()

    def atom(self) -> int:
        kind, text = self.take()
        if kind == "num":
            return wrap64(_number(text))
        if kind == "name":
            if self.peek() == "=":
                raise ArithError("assignment in arithmetic")
            return self.lookup(text)
        if text == "(":
            value = self.ternary()
            if self.take()[1] != ")":
                raise ArithError("expected ')'")
            return value
        raise ArithError(f"unexpected {text!r}")


def _apply(op: str, a: int, b: int) -> int:
    if op in ("/", "%"):
        if b == 0:
            raise ArithError("division by 0")
        quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # C truncation
        return quotient if op == "/" else a - quotient * b
    return {
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
        "<<": lambda: a << (b & 63), ">>": lambda: a >> (b & 63),
        "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b),
        ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
        "&": lambda: a & b, "^": lambda: a ^ b, "|": lambda: a | b,
        "&&": lambda: int(bool(a) and bool(b)), "||": lambda: int(bool(a) or bool(b)),
    }[op]()


def apply_binary(op: str, a: int, b: int) -> int:
    """`a op b` as bash computes it (a compound assignment `x op= b`), wrapped to 64 bits."""
    return wrap64(_apply(op, a, b))



# A name the expression assigns: `x = …`, `x += …` (and the other compound operators, not `==`,
# `<=`, `>=`, `!=`), `x[i] = …`, `++x`, `x--`.
_ASSIGNS = lazy_pattern(
    r"(?<![\w$])([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)?(?:<<|>>|[-+*/%&^|])?=(?!=)"
    r"|(?:\+\+|--)\s*([A-Za-z_]\w*)"
    r"|(?<![\w$])([A-Za-z_]\w*)\s*(?:\+\+|--)")


def assigned_names(text: str) -> list[str]:
    """The names the expression assigns, in order, each once (generator/reading/shell/setters.py applies
    them; evaluate() refuses them)."""
    found = (m.group(1) or m.group(2) or m.group(3) for m in _ASSIGNS().finditer(text))
    return list(dict.fromkeys(found))

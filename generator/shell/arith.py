"""Bash `$(( ))` arithmetic with bash's signed 64-bit wrap-around: numbers, variables,
+ - * / % **, comparisons, logic, bit operations, ?:, parentheses. Assignments are refused."""

from __future__ import annotations

from collections.abc import Callable

from generator.safe_regex import lazy_pattern

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
    pos = 0

    def peek() -> str | None:
        return tokens[pos][1] if pos < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal pos
        if pos >= len(tokens):
            raise ArithError("unexpected end of arithmetic")
        pos += 1
        return tokens[pos - 1]

    def ternary() -> int:
        cond = binary(0)
        if peek() == "?":
            take()
            yes = ternary()
            if take()[1] != ":":
                raise ArithError("expected ':'")
            no = ternary()
            return yes if cond else no
        return cond

    def binary(level: int) -> int:
        if level == len(_BINARY):
            return power()
        left = binary(level + 1)
        while peek() in _BINARY[level] and tokens[pos][0] == "op":
            op = take()[1]
            right = binary(level + 1)
            left = wrap64(_apply(op, left, right))
        return left

    def power() -> int:
        base = unary()
        if peek() == "**":
            take()
            exponent = power()
            if exponent < 0:
                raise ArithError("exponent less than 0")
            return wrap64(pow(base, exponent, 1 << 64))
        return base

    def unary() -> int:
        tok = peek()
        if tok in ("-", "+", "!", "~") and tokens[pos][0] == "op":
            take()
            value = unary()
            return wrap64({"-": -value, "+": value, "!": int(not value), "~": ~value}[tok])
        return atom()

    def atom() -> int:
        kind, text_ = take()
        if kind == "num":
            return wrap64(_number(text_))
        if kind == "name":
            if peek() == "=":
                raise ArithError("assignment in arithmetic")
            return lookup(text_)
        if text_ == "(":
            value = ternary()
            if take()[1] != ")":
                raise ArithError("expected ')'")
            return value
        raise ArithError(f"unexpected {text_!r}")

    if not tokens:
        return 0
    result = ternary()
    if pos != len(tokens):
        raise ArithError(f"unexpected {tokens[pos][1]!r}")
    return result


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

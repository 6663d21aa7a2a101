"""Safe arithmetic expressions of time for analytic reference checks, e.g.
"A * exp(-zeta * w * t) * cos(w * sqrt(1 - zeta**2) * t)": numbers, named parameters, ``t`` [s],
+ - * / ** and the functions below; nothing else is evaluated (no attributes, no builtins)."""

from __future__ import annotations

import ast
import math

import numpy as np

FUNCTIONS = {
    name: getattr(np, name)
    for name in (
        "sin",
        "cos",
        "tan",
        "arcsin",
        "arccos",
        "arctan",
        "arctan2",
        "sinh",
        "cosh",
        "tanh",
        "exp",
        "log",
        "log10",
        "sqrt",
        "abs",
        "sign",
        "minimum",
        "maximum",
        "where",
        "heaviside",
    )
}
ARITY = {"arctan2": 2, "minimum": 2, "maximum": 2, "heaviside": 2, "where": 3}  # the others take 1
CONSTANTS = {"pi": np.pi, "e": np.e}
MAX_LENGTH = 10_000  # characters of an expression
MAX_DEPTH = 100  # nesting of operations and calls
_BINOPS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide, ast.Pow: np.power}
_CMP = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal}


class ExpressionError(ValueError):
    """An expression that is not allowed or does not parse; the message says what and where."""


def compile_expression(text: str, names: set[str]) -> ast.Expression:
    """Parse and check ``text`` using only ``names`` (plus t, pi, e and FUNCTIONS): every name
    known, every function called with its number of arguments, never used as a value, numbers
    finite, one comparison at a time, at most MAX_LENGTH characters nested MAX_DEPTH deep; then
    one trial evaluation, so an expression that loads also evaluates."""
    text = str(text)
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression of {len(text)} characters; at most {MAX_LENGTH}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ExpressionError(f"cannot parse {_short(text)}: {e.msg} at column {e.offset}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError(f"expression {_short(text)} is nested too deeply to parse") from None
    allowed = names | {"t"} | set(CONSTANTS)
    calls = set()
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ExpressionError(f"expression {_short(text)} is nested more than {MAX_DEPTH} deep")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
        if isinstance(node, ast.Name):
            if node.id in FUNCTIONS and node.id not in allowed:
                if id(node) not in calls:
                    raise ExpressionError(
                        f"function {node.id!r} used as a value in {_short(text)}; call it: {node.id}(...)"
                    )
            elif node.id not in allowed:
                raise ExpressionError(
                    f"unknown name {node.id!r} in {_short(text)}; known: {', '.join(sorted(allowed))}"
                )
        elif isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS) or node.keywords:
                raise ExpressionError(f"only the functions {', '.join(FUNCTIONS)} may be called in {_short(text)}")
            calls.add(id(node.func))
            want = ARITY.get(node.func.id, 1)
            if len(node.args) != want or any(isinstance(a, ast.Starred) for a in node.args):
                raise ExpressionError(
                    f"{node.func.id}() takes {want} argument(s), got {len(node.args)} in {_short(text)}"
                )
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
                raise ExpressionError(f"only numbers are allowed as constants in {_short(text)}")
            try:
                ok = math.isfinite(float(node.value))
            except OverflowError:
                ok = False
            if not ok:
                raise ExpressionError(f"number beyond the float range (1.8e308) in {_short(text)}")
        elif isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise ExpressionError(
                    f"chained comparison in {_short(text)}: write one comparison at a time, e.g. (0 < t) * (t < 1)"
                )
        elif not isinstance(
            node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Load, ast.USub, ast.UAdd, *_BINOPS, *_CMP)
        ):
            raise ExpressionError(f"{type(node).__name__} is not allowed in {_short(text)}")
    try:
        evaluate(tree, np.array([0.0, 1.0]), {n: 1.0 for n in names})
    except Exception as e:  # noqa: BLE001 - whatever numpy raises, the expression is refused at load
        raise ExpressionError(f"{_short(text)} does not evaluate: {type(e).__name__}: {e}") from None
    return tree


def _short(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")


def evaluate(tree: ast.Expression, t: np.ndarray, params: dict[str, float]) -> np.ndarray:
    """Value of a compiled expression at the times t [s] with the given parameters."""
    env = {**CONSTANTS, **params, "t": np.asarray(t, dtype=float)}

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.BinOp):
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp):
            return -ev(node.operand) if isinstance(node.op, ast.USub) else ev(node.operand)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise ExpressionError("chained comparisons are not allowed")
            return _CMP[type(node.ops[0])](ev(node.left), ev(node.comparators[0])).astype(float)
        return FUNCTIONS[node.func.id](*(ev(a) for a in node.args))

    with np.errstate(all="ignore"):
        return np.broadcast_to(np.asarray(ev(tree), dtype=float), np.shape(t)).copy()

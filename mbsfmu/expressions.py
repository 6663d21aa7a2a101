"""Safe arithmetic expressions of time for analytic reference checks, e.g.
"A * exp(-zeta * w * t) * cos(w * sqrt(1 - zeta**2) * t)": numbers, named parameters, ``t`` [s],
+ - * / ** and the functions below; nothing else is evaluated (no attributes, no builtins)."""
from __future__ import annotations

import ast

import numpy as np

FUNCTIONS = {name: getattr(np, name) for name in
             ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
              "exp", "log", "log10", "sqrt", "abs", "sign", "minimum", "maximum", "where", "heaviside")}
CONSTANTS = {"pi": np.pi, "e": np.e}
_BINOPS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide, ast.Pow: np.power}
_CMP = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal}


class ExpressionError(ValueError):
    """An expression that is not allowed or does not parse; the message says what and where."""


def compile_expression(text: str, names: set[str]) -> ast.Expression:
    """Parse and check ``text`` using only ``names`` (plus t, pi, e and FUNCTIONS)."""
    try:
        tree = ast.parse(str(text), mode="eval")
    except SyntaxError as e:
        raise ExpressionError(f"cannot parse {text!r}: {e.msg} at column {e.offset}") from None
    allowed = names | {"t"} | set(CONSTANTS)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in allowed and node.id not in FUNCTIONS:
                raise ExpressionError(f"unknown name {node.id!r} in {text!r}; known: {', '.join(sorted(allowed))}")
        elif isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS) or node.keywords:
                raise ExpressionError(f"only the functions {', '.join(FUNCTIONS)} may be called in {text!r}")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, (int, float)) or isinstance(node.value, bool):
                raise ExpressionError(f"only numbers are allowed as constants in {text!r}")
        elif not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Load, ast.USub, ast.UAdd,
                                   ast.Compare, *_BINOPS, *_CMP)):
            raise ExpressionError(f"{type(node).__name__} is not allowed in {text!r}")
    return tree


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

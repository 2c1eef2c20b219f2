"""A thin sparse LP/MILP builder over HiGHS (highspy).

Solvers add named variable groups and rows as sparse (index, coefficient) lists and get the
solution back as numpy arrays; building the matrix in CSC once is what keeps Python overhead
small next to HiGHS' own time on fat-tree instances.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import highspy
import numpy as np

INF = highspy.kHighsInf


def _silence_banner() -> None:
    """HiGHS 1.16 prints its banner on fd 1 at a process's first ``Highs()``, whatever its
    options; make that first instance here with fd 1 on /dev/null, so tables and JSON a
    command prints on stdout are not preceded by it."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


_silence_banner()


class SolverError(RuntimeError):
    """HiGHS did not reach an optimal solution."""


@dataclass
class Solution:
    """Primal values (by variable index), row duals and the objective."""

    values: np.ndarray
    row_duals: np.ndarray
    objective: float
    seconds: float
    optimal: bool = True  # False: a MILP stopped at its time limit with an incumbent


class LPModel:
    """Maximisation LP/MILP accumulated in coordinate form, solved with HiGHS."""

    def __init__(self) -> None:
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.cost: list[float] = []
        self.integer: list[bool] = []
        self.rows_lo: list[float] = []
        self.rows_hi: list[float] = []
        self.coo_row: list[int] = []
        self.coo_col: list[int] = []
        self.coo_val: list[float] = []

    def var(self, lower: float = 0.0, upper: float = INF, cost: float = 0.0,
            integer: bool = False) -> int:
        """Add one variable; returns its index."""
        self.lower.append(lower)
        self.upper.append(upper)
        self.cost.append(cost)
        self.integer.append(integer)
        return len(self.lower) - 1

    def row(self, terms: list[tuple[int, float]], lower: float = -INF, upper: float = INF) -> int:
        """Add lower <= sum(coef * var) <= upper; returns the row index."""
        r = len(self.rows_lo)
        self.rows_lo.append(lower)
        self.rows_hi.append(upper)
        for col, val in terms:
            self.coo_row.append(r)
            self.coo_col.append(col)
            self.coo_val.append(val)
        return r

    @property
    def num_vars(self) -> int:
        return len(self.lower)

    @property
    def num_rows(self) -> int:
        return len(self.rows_lo)

    def solve(self, time_limit: float | None = None, mip_gap: float | None = None,
              threads: int = 1, method: str = "ipm") -> Solution:
        """Maximise; raises SolverError unless HiGHS reports an optimal solution.

        LPs use interior point + crossover by default: 2-5x faster than dual simplex on
        LP-InArt instances (measured on fattree:6/8), and crossover still returns a vertex.
        """
        self.load(time_limit, mip_gap, threads, method)
        return self.resolve()

    def load(self, time_limit: float | None = None, mip_gap: float | None = None,
             threads: int = 1, method: str = "ipm", max_nodes: int | None = None) -> None:
        """Pass the model to HiGHS without solving it, so bounds can change before a run.
        `max_nodes` caps a MILP's branch-and-bound nodes: unlike a time limit, the same
        instance then always stops at the same incumbent."""
        self.highs = self._load(time_limit, mip_gap, threads)
        if max_nodes is not None:
            self.highs.setOptionValue("mip_max_nodes", int(max_nodes))
        if not any(self.integer):
            self.highs.setOptionValue("solver", method)

    def set_start(self, values: list[float]) -> None:
        """A MILP's first incumbent (column values), checked by HiGHS before it searches."""
        start = highspy.HighsSolution()
        start.col_value = list(values)
        start.value_valid = True
        self.highs.setSolution(start)

    def set_coeff(self, row: int, col: int, value: float) -> None:
        """Set an existing coefficient; once loaded, HiGHS keeps its basis for a warm start."""
        if getattr(self, "highs", None) is not None:
            self.highs.changeCoeff(row, col, value)
        if not hasattr(self, "_where") or len(self._where) != len(self.coo_val):
            self._where = {(r, c): i for i, (r, c) in
                           enumerate(zip(self.coo_row, self.coo_col, strict=True))}
        if (row, col) not in self._where:
            raise KeyError(f"no coefficient at row {row}, column {col}")
        self.coo_val[self._where[(row, col)]] = value

    def set_row_bounds(self, rows: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """Change row bounds of the loaded model in place (HiGHS keeps its basis)."""
        self.highs.changeRowsBounds(len(rows), np.asarray(rows, dtype=np.int32),
                                    np.asarray(lower, dtype=np.float64),
                                    np.asarray(upper, dtype=np.float64))

    def resolve(self, infeasible_ok: bool = False) -> Solution | None:
        """Run HiGHS on the loaded model, warm-started from the previous basis if any.

        With `infeasible_ok`, a proven infeasible LP returns None instead of raising: the
        count LP's bisection (count_lp.py) reads infeasibility as a proof.
        """
        h = self.highs
        t0 = time.perf_counter()
        h.run()
        seconds = time.perf_counter() - t0
        status = h.getModelStatus()
        if infeasible_ok and status in (highspy.HighsModelStatus.kInfeasible,
                                        highspy.HighsModelStatus.kUnboundedOrInfeasible):
            return None
        optimal = ok = status == highspy.HighsModelStatus.kOptimal
        if not ok and any(self.integer) and h.getInfo().primal_solution_status == 2:
            ok = True  # time limit with a feasible incumbent: still usable for a MILP
        if not ok:
            raise SolverError(f"HiGHS: {h.modelStatusToString(status)}")
        sol = h.getSolution()
        return Solution(values=np.asarray(sol.col_value), row_duals=np.asarray(sol.row_dual),
                        objective=h.getInfo().objective_function_value,
                        seconds=seconds, optimal=optimal)

    def _load(self, time_limit: float | None, mip_gap: float | None,
              threads: int) -> highspy.Highs:
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", threads)
        if time_limit is not None:
            h.setOptionValue("time_limit", float(time_limit))
        if mip_gap is not None:
            h.setOptionValue("mip_rel_gap", float(mip_gap))
        lp = highspy.HighsLp()
        lp.num_col_ = self.num_vars
        lp.num_row_ = self.num_rows
        lp.sense_ = highspy.ObjSense.kMaximize
        lp.col_cost_ = np.asarray(self.cost, dtype=np.float64)
        lp.col_lower_ = np.asarray(self.lower, dtype=np.float64)
        lp.col_upper_ = np.asarray(self.upper, dtype=np.float64)
        lp.row_lower_ = np.asarray(self.rows_lo, dtype=np.float64)
        lp.row_upper_ = np.asarray(self.rows_hi, dtype=np.float64)
        start, index, value = _csc(self.coo_row, self.coo_col, self.coo_val, self.num_vars)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = start
        lp.a_matrix_.index_ = index
        lp.a_matrix_.value_ = value
        if any(self.integer):
            lp.integrality_ = [highspy.HighsVarType.kInteger if i else
                               highspy.HighsVarType.kContinuous for i in self.integer]
        h.passModel(lp)
        return h


def _csc(rows: list[int], cols: list[int], vals: list[float],
         num_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coordinate entries to compressed columns, duplicates summed.  numpy alone: importing
    scipy.sparse for this cost 0.3-0.5 s of CPU, a third of a fattree:6 solve."""
    r, c = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    v = np.asarray(vals, dtype=np.float64)
    order = np.lexsort((r, c))
    r, c, v = r[order], c[order], v[order]
    first = np.ones(len(r), dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    groups = np.cumsum(first) - 1
    v = np.bincount(groups, weights=v, minlength=int(first.sum())) if len(v) else v
    r, c = r[first], c[first]
    start = np.zeros(num_cols + 1, dtype=np.int32)
    np.cumsum(np.bincount(c, minlength=num_cols), out=start[1:])
    return start, r.astype(np.int32), v.astype(np.float64)

"""Hashed features and L2-regularised logistic regression for the learned-field ranker.

Why not scikit-learn: the ranker used ``FeatureHasher`` and ``LogisticRegression(solver=
"liblinear")`` and nothing else of it, and scikit-learn brings SciPy: 195 MB of a runtime
install whose goal is 1 GB (issue 34; scipy 142.9 MB, scikit-learn 48.5 MB, joblib, narwhals,
threadpoolctl, measured from the installed files' RECORDs). Both pieces are small and exactly
specified, so they are written here and checked against scikit-learn itself
(tests/unit/fields/test_logistic.py, scikit-learn in the dev extra only):

- :func:`hash_features` is scikit-learn's ``FeatureHasher(n_features, input_type="string",
  alternate_sign=False)``: a feature string's column is ``|MurmurHash3_x86_32(utf-8, seed 0)|
  mod n_features`` (signed 32-bit hash, Appleby 2011, via the ``mmh3`` package), its value the
  number of times it occurs. The columns are the same, so stored models keep working.
- :func:`fit_logistic` minimises liblinear's primal L2-regularised logistic loss (Fan et al.
  2008, "LIBLINEAR", solver L2R_LR; scikit-learn's ``solver="liblinear"``): ``½‖w‖² + Σᵢ Cᵢ
  log(1 + exp(−yᵢ wᵀxᵢ))`` with the intercept a constant feature 1 that is regularised like
  the others (liblinear's ``intercept_scaling=1``) and ``Cᵢ = C · n / (2 · nᵧᵢ)`` for
  ``class_weight="balanced"``. The objective is strictly convex, so any solver that reaches
  its minimum finds the same weights; this one is Newton's method with conjugate-gradient
  steps (Lin, Weng & Keerthi 2008, the method liblinear itself uses, here with a backtracking
  line search instead of a trust region) and stops at a gradient norm 1e-6 of the first one,
  tighter than liblinear's default 1e-4 (so weights agree with scikit-learn's to about 1e-3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import mmh3
import numpy as np


@dataclass(frozen=True)
class HashedRows:
    """A sparse matrix in coordinate form: ``values[k]`` at (``rows[k]``, ``columns[k]``).

    ``rows`` are 0 … ``n_rows`` − 1 (int64), ``columns`` hashed columns in [0, n_features)
    (int64), ``values`` float64 counts; one entry per distinct (row, column).
    """

    rows: np.ndarray
    columns: np.ndarray
    values: np.ndarray
    n_rows: int

    def dot(self, weights: np.ndarray) -> np.ndarray:
        """``X @ weights`` (``weights`` indexed by column) → one float per row."""
        return np.bincount(self.rows, weights=self.values * weights[self.columns], minlength=self.n_rows)


def hash_features(features: Sequence[Sequence[str]], *, n_features: int) -> HashedRows:
    """Rows of feature strings as hashed counts, exactly scikit-learn's ``FeatureHasher``
    with ``input_type="string", alternate_sign=False`` (see the module docstring).

    Args:
        features: One list of feature strings per row (a string may repeat: counts add).
        n_features: Number of hashed columns (> 0).

    Returns:
        The :class:`HashedRows`, duplicates within a row summed.

    Raises:
        ValueError: ``n_features`` < 1.
    """
    if n_features < 1:
        raise ValueError(f"n_features must be ≥ 1, got {n_features}")
    counts: dict[tuple[int, int], float] = {}
    for r, row in enumerate(features):
        for f in row:
            key = (r, abs(mmh3.hash(f.encode("utf-8"), 0, signed=True)) % n_features)
            counts[key] = counts.get(key, 0.0) + 1.0
    if not counts:
        empty = np.zeros(0, dtype=np.int64)
        return HashedRows(empty, empty, np.zeros(0), len(features))
    keys = np.array(list(counts), dtype=np.int64)
    return HashedRows(keys[:, 0], keys[:, 1], np.fromiter(counts.values(), float, len(counts)), len(features))


@dataclass(frozen=True)
class LogisticFit:
    """Fitted weights: ``coef`` per column of the compact column list ``columns`` (the hashed
    columns that occur in the training rows, sorted) and the ``intercept``."""

    columns: np.ndarray
    coef: np.ndarray
    intercept: float


def fit_logistic(
    x: HashedRows,
    labels: Sequence[int],
    *,
    c: float,
    tolerance: float = 1e-6,
    max_newton_steps: int = 100,
) -> LogisticFit:
    """Balanced-class, L2-regularised logistic regression (liblinear's L2R_LR objective, see
    the module docstring) fitted by Newton–CG.

    Args:
        x: The training rows.
        labels: 0 or 1 per row; both classes must occur.
        c: The inverse regularisation strength C (> 0).
        tolerance: Stop when ‖∇‖ ≤ tolerance · ‖∇ at w = 0‖.
        max_newton_steps: Upper bound on Newton steps (about 10 are taken on the Kleister NDA
            fields).

    Returns:
        :class:`LogisticFit` (weights of columns that never occur are 0 and left out).

    Raises:
        ValueError: ``labels`` not 0/1 of the rows' length, only one class, or ``c`` ≤ 0.
    """
    y01 = np.asarray(labels, dtype=np.int64)
    if y01.shape != (x.n_rows,) or not np.isin(y01, (0, 1)).all():
        raise ValueError(f"labels must be 0/1, one per row ({x.n_rows}), got shape {y01.shape}")
    positives = int(y01.sum())
    if positives in (0, x.n_rows):
        raise ValueError("labels must hold both classes")
    if c <= 0:
        raise ValueError(f"c must be > 0, got {c}")
    columns, compact = np.unique(x.columns, return_inverse=True)
    m = len(columns) + 1  # the last weight is the intercept's (a constant feature 1)
    rows = np.concatenate([x.rows, np.arange(x.n_rows)])
    cols = np.concatenate([compact, np.full(x.n_rows, m - 1)])
    vals = np.concatenate([x.values, np.ones(x.n_rows)])
    y = np.where(y01 == 1, 1.0, -1.0)
    n = x.n_rows
    cost = np.where(y01 == 1, c * n / (2 * positives), c * n / (2 * (n - positives)))

    def xv(w: np.ndarray) -> np.ndarray:
        return np.bincount(rows, weights=vals * w[cols], minlength=n)

    def xtu(u: np.ndarray) -> np.ndarray:
        return np.bincount(cols, weights=vals * u[rows], minlength=m)

    def objective(w: np.ndarray, z: np.ndarray) -> float:
        return float(0.5 * w @ w + cost @ np.logaddexp(0.0, -y * z))

    w = np.zeros(m)
    z = np.zeros(n)
    first_norm = 0.0
    for _ in range(max_newton_steps):
        sigma = 1.0 / (1.0 + np.exp(-y * z))  # P(correct label)
        grad = w + xtu(cost * (sigma - 1.0) * y)
        norm = float(np.linalg.norm(grad))
        first_norm = first_norm or norm
        if norm <= tolerance * first_norm:
            break
        d_weights = cost * sigma * (1.0 - sigma)
        hessian_times = partial(_hessian_times, xv=xv, xtu=xtu, curvature=d_weights)
        step = _conjugate_gradient(hessian_times, -grad, tol=0.1 * min(1.0, norm))
        dz = xv(step)
        f0, slope, t = objective(w, z), float(grad @ step), 1.0
        while objective(w + t * step, z + t * dz) > f0 + 1e-4 * t * slope and t > 1e-10:
            t *= 0.5  # Armijo backtracking: Newton's full step is taken near the minimum
        w, z = w + t * step, z + t * dz
    return LogisticFit(columns, w[:-1], float(w[-1]))


def _hessian_times(
    v: np.ndarray,
    *,
    xv: Callable[[np.ndarray], np.ndarray],
    xtu: Callable[[np.ndarray], np.ndarray],
    curvature: np.ndarray,
) -> np.ndarray:
    """``(I + Xᵀ D X) v``, the regularised logistic loss's Hessian times ``v`` (D = ``curvature``)."""
    return v + xtu(curvature * xv(v))


def _conjugate_gradient(
    hessian_times: Callable[[np.ndarray], np.ndarray], rhs: np.ndarray, *, tol: float, max_steps: int = 250
) -> np.ndarray:
    """Solve ``H d = rhs`` for a symmetric positive definite ``H`` given as ``v → H v``,
    stopping at ‖residual‖ ≤ tol · ‖rhs‖ (Hestenes & Stiefel 1952)."""
    d = np.zeros_like(rhs)
    r = rhs.copy()
    p = r.copy()
    rr = float(r @ r)
    stop = (tol * float(np.linalg.norm(rhs))) ** 2
    for _ in range(max_steps):
        if rr <= stop:
            break
        hp = hessian_times(p)
        alpha = rr / float(p @ hp)
        d += alpha * p
        r -= alpha * hp
        rr_next = float(r @ r)
        p = r + (rr_next / rr) * p
        rr = rr_next
    return d

"""Training a ranker (loader side: NumPy, seconds): pairwise logistic regression (RankNet
with a linear scorer). For each question every gold candidate is paired with the
non-gold candidates ranked above it and with the best MAX_NEGATIVES others (in effect all
of them: pairs from the top alone teach the model that a low base rank is good, which
then lifts the bottom of the list); the weights
minimise the logistic loss of each pair's score difference plus an L2 penalty, by Newton's
method (the features are few, so the Hessian is small and the fit is exact and
deterministic)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .features import NAMES
from .model import Model

MAX_NEGATIVES = 200  # non-gold candidates paired with each gold one, best base rank first
L2 = 10.0  # the penalty on the weights (the features are standardised)
ITERATIONS = 30


def pairs(groups: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The difference (gold minus other) of each training pair, one row each. Each group is
    (X, y): a question's candidates in base order, y 1 for gold."""
    rows = []
    for x, y in groups:
        gold = np.flatnonzero(y > 0)
        if not len(gold) or len(gold) == len(y):
            continue
        for g in gold:
            others = np.flatnonzero(y == 0)
            others = np.union1d(others[others < g], others[:MAX_NEGATIVES])
            rows.append(x[g] - x[others])
    return np.vstack(rows) if rows else np.zeros((0, len(NAMES)))


def fit(
    groups: Sequence[tuple[np.ndarray, np.ndarray]], features: Sequence[str] = NAMES
) -> Model | None:
    """A model over `features` (a subset of NAMES: the ablations leave groups out), or None
    when no question has both a gold and a non-gold candidate."""
    cols = [NAMES.index(f) for f in features]
    groups = [(x[:, cols], y) for x, y in groups if len(y)]
    if not groups:
        return None
    every = np.vstack([x for x, _ in groups])
    mean = every.mean(axis=0)
    scale = every.std(axis=0)
    scale[scale < 1e-9] = 1.0
    diffs = pairs([((x - mean) / scale, y) for x, y in groups])
    if not len(diffs):
        return None
    w = np.zeros(diffs.shape[1])
    for _ in range(ITERATIONS):
        margin = diffs @ w
        p = 1.0 / (1.0 + np.exp(np.clip(margin, -50, 50)))  # P(pair misordered)
        grad = -(diffs.T @ p) / len(diffs) + 2 * L2 / len(diffs) * w
        hess = (diffs.T * (p * (1 - p))) @ diffs / len(diffs)
        hess += 2 * L2 / len(diffs) * np.eye(len(w))
        step = np.linalg.solve(hess + 1e-9 * np.eye(len(w)), grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Model(
        tuple(features),
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        tuple(float(v) for v in w),
    )

"""A stored ranker model (codesift.ranker_models.model, jsonb): a linear scorer over named
features (features.py), standardised. Anything else in the column (a hand-edited or
truncated model, one from another version) is refused by parse() with ModelError, and the
stage then stays off and says so (pipeline/rerank.py)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from .features import NAMES

FORMAT = "codesift-linear-ranker"
VERSION = 1
MAX_WEIGHT = 1e6  # a larger weight or scale is not a model training makes


class ModelError(ValueError):
    """The stored model cannot be used."""


@dataclass(frozen=True)
class Model:
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
        }

    def score(self, vectors: list[list[float]]) -> list[float]:
        """The model's score of each feature vector (all of NAMES, in order)."""
        cols = [NAMES.index(f) for f in self.features]
        terms = list(zip(cols, self.mean, self.scale, self.weights, strict=True))
        return [sum(w * (x[c] - m) / s for c, m, s, w in terms) for x in vectors]


def _numbers(doc: dict, key: str, n: int, positive: bool = False) -> tuple[float, ...]:
    values = doc.get(key)
    if not isinstance(values, list) or len(values) != n:
        raise ModelError(f"'{key}' is not a list of {n} numbers")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ModelError(f"'{key}' holds a value that is not a number")
        v = float(v)
        if not math.isfinite(v) or abs(v) > MAX_WEIGHT or (positive and v <= 0):
            raise ModelError(f"'{key}' holds {v!r}")
        out.append(v)
    return tuple(out)


def parse(raw) -> Model:
    """The Model of a stored value (a dict, or its JSON text); ModelError when it is not one."""
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise ModelError(f"not JSON: {str(exc)[:80]}") from None
    if not isinstance(raw, dict):
        raise ModelError("not a JSON object")
    if raw.get("format") != FORMAT or raw.get("version") != VERSION:
        raise ModelError(f"not a {FORMAT} of version {VERSION}")
    names = raw.get("features")
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(n, str) and n in NAMES for n in names)
        or len(set(names)) != len(names)
    ):
        raise ModelError("'features' is not a list of known feature names")
    n = len(names)
    return Model(
        tuple(names),
        _numbers(raw, "mean", n),
        _numbers(raw, "scale", n, positive=True),
        _numbers(raw, "weights", n),
    )

"""`RefusalGate`: decides from retrieval evidence alone whether the book can answer a question.

On a real book no single cosine cut separates answerable from must-refuse questions, so the gate is a small
logistic model over several retrieval features. `fit` calibrates it on labeled questions (optimize.py); its
weights and thresholds are program state, saved with the compiled program like a predictor's demos.
"""

from __future__ import annotations

import math
import re

import numpy as np
from dspy.predict.parameter import Parameter

from programs.rag.query_terms import content_terms, name_terms, term_set
from retrievers.passage import Passage, rank_key

FEATURES = (
    "top_dense",  # best cosine similarity
    "mean_top3_dense",
    "dense_gap",  # best minus fifth-best cosine: a clear winner vs a flat list
    "sparse_per_term",  # best BM25 score per query content word
    "coverage_top1",  # share of query content words found in the best passage
    "coverage_top3",
    "uncovered_terms",  # how many query content words no passage contains
    "uncovered_names",  # how many name-like query words (Jazzy, MuJoCo, VLP-16) no passage contains
    "override",  # the question tries to override the instructions
)
_OVERRIDE = re.compile(
    r"ignore (all |any |your |the |previous |prior )*(instructions|rules|context|book)|system prompt|"
    r"you are now|pretend (to be|you)|forget (the|your|about)|general knowledge|jailbreak|developer mode|"
    r"disregard|as (an|the) admin|act as",
    re.IGNORECASE,
)


def refusal_rates(probabilities: list[float], answerable: list[bool], cut: float) -> tuple[float, float]:
    """(refusal recall, false-refusal rate) of refusing every question whose probability is below `cut`."""
    refused_refuse = [p < cut for p, a in zip(probabilities, answerable) if not a]
    refused_answerable = [p < cut for p, a in zip(probabilities, answerable) if a]
    return (sum(refused_refuse) / max(1, len(refused_refuse)),
            sum(refused_answerable) / max(1, len(refused_answerable)))


def gate_features(question: str, passages: list[Passage]) -> dict[str, float]:
    # A passage only the sparse branch found has no cosine; it is below every cosine the dense branch
    # returned, so leaving it out (rather than counting it as 0) keeps `dense_gap` from inflating.
    dense = sorted((p.dense_score for p in passages if p.dense_score is not None), reverse=True) or [0.0]
    terms = content_terms(question)
    # The retriever's own order; passages merged from several searches (query expansion) are re-ranked by it.
    ranked = sorted(passages, key=rank_key)
    texts = [term_set(f"{p.title} {p.heading} {p.text}") for p in ranked]
    top3 = set().union(*texts[:3]) if texts else set()

    def coverage(words: set[str]) -> float:
        return sum(t in words for t in terms) / len(terms) if terms else 0.0

    every = set().union(*texts) if texts else set()
    return {
        "top_dense": dense[0],
        "mean_top3_dense": float(np.mean(dense[:3])),
        "dense_gap": dense[0] - dense[min(4, len(dense) - 1)],
        "sparse_per_term": max((p.sparse_score or 0.0 for p in passages), default=0.0) / max(1, len(terms)),
        "coverage_top1": coverage(texts[0]) if texts else 0.0,
        "coverage_top3": coverage(top3),
        "uncovered_terms": float(sum(t not in every for t in terms)),
        "uncovered_names": float(sum(t not in every for t in name_terms(question))),
        "override": 1.0 if _OVERRIDE.search(question) else 0.0,
    }


class RefusalGate(Parameter):
    """P(answerable | retrieval features). Uncalibrated, it is a prior over cosine and term coverage."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        # The zero-shot prior: a plain cosine cut softened by term coverage; calibration replaces it.
        self.weights = {"top_dense": 12.0, "coverage_top3": 4.0, "override": -6.0}
        self.mean = {name: 0.0 for name in FEATURES}
        self.scale = {name: 1.0 for name in FEATURES}
        self.bias = -12.0 * 0.30 - 4.0 * 0.5
        self.threshold = 0.5  # refuse below this probability
        self.high_confidence = 0.8  # "high" confidence at or above this probability
        self.calibrated = False

    @classmethod
    def cosine_cut(cls, threshold: float) -> RefusalGate:
        """The single-cut baseline: refuse exactly when the best cosine is below `threshold`."""
        gate = cls()
        # A step-like logistic: z = 1e6 * (top_dense - threshold) keeps p >= 0.5 iff top_dense >= threshold.
        gate.weights, gate.bias = {"top_dense": 1e6}, 0.0
        gate.mean["top_dense"] = float(threshold)
        gate.threshold = gate.high_confidence = 0.5
        gate.calibrated = True
        return gate

    @classmethod
    def fit_cosine_cut(cls, features: list[dict[str, float]], answerable: list[bool],
                       max_false_refusal: float = 0.15) -> RefusalGate:
        """The single cosine cut chosen on these examples by the same rule as the full gate's probability cut."""
        cosines = [f["top_dense"] for f in features]
        return cls.cosine_cut(cls._best_threshold(cosines, answerable, max_false_refusal))

    def probability(self, features: dict[str, float]) -> float:
        z = self.bias + sum(
            w * (features[name] - self.mean[name]) / self.scale[name] for name, w in self.weights.items()
        )
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def __call__(self, question: str, passages: list[Passage]) -> tuple[bool, float, dict]:
        """(answerable?, probability, features)."""
        features = gate_features(question, passages)
        p = self.probability(features)
        return p >= self.threshold, p, features

    def fit(self, features: list[dict[str, float]], answerable: list[bool], l2: float = 0.1,
            max_false_refusal: float = 0.15) -> RefusalGate:
        """Logistic regression (standardized features, L2), then the probability cut that maximizes balanced
        refusal accuracy with at most `max_false_refusal` of answerable questions refused, on these examples."""
        X = np.array([[f[name] for name in FEATURES] for f in features], dtype=float)
        y = np.array(answerable, dtype=float)
        mean, scale = X.mean(axis=0), X.std(axis=0)
        scale[scale < 1e-9] = 1.0
        Z = (X - mean) / scale
        w, b = np.zeros(Z.shape[1]), 0.0
        for _ in range(3000):  # plain gradient descent: tiny, deterministic, no extra dependency
            p = 1.0 / (1.0 + np.exp(-(Z @ w + b)))
            w -= 0.5 * (Z.T @ (p - y) / len(y) + l2 * w / len(y))
            b -= 0.5 * float(np.mean(p - y))
        self.weights = dict(zip(FEATURES, map(float, w)))
        self.mean, self.scale = dict(zip(FEATURES, map(float, mean))), dict(zip(FEATURES, map(float, scale)))
        self.bias = float(b)
        self.threshold = self._best_threshold([self.probability(f) for f in features], answerable, max_false_refusal)
        self.high_confidence = max(self.threshold, 0.8)
        self.calibrated = True
        return self

    @staticmethod
    def _best_threshold(probabilities: list[float], answerable: list[bool], max_false_refusal: float) -> float:
        best, best_score = 0.5, -1.0
        for cut in sorted(set(probabilities)):
            refusal_recall, false_refusal = refusal_rates(probabilities, answerable, cut)
            score = (refusal_recall + 1 - false_refusal) / 2
            if false_refusal <= max_false_refusal and score > best_score:
                best, best_score = cut, score
        return best

    def dump_state(self, json_mode: bool = True) -> dict:
        return {
            "weights": self.weights, "mean": self.mean, "scale": self.scale, "bias": self.bias,
            "threshold": self.threshold, "high_confidence": self.high_confidence, "calibrated": self.calibrated,
        }

    def load_state(self, state: dict) -> RefusalGate:
        try:
            weights = {k: float(v) for k, v in state["weights"].items()}
            if not set(weights) <= set(FEATURES):
                raise ValueError(f"unknown features {sorted(set(weights) - set(FEATURES))}")
            missing = {k for k in weights if k not in state["mean"] or k not in state["scale"]}
            if missing:
                raise ValueError(f"no standardization for {sorted(missing)}")
            self.weights = weights
            # A state saved before a feature existed has no entry for it (and no weight on it).
            self.mean = {k: float(state["mean"].get(k, 0.0)) for k in FEATURES}
            self.scale = {k: float(state["scale"].get(k, 1.0)) or 1.0 for k in FEATURES}
            self.bias, self.threshold = float(state["bias"]), float(state["threshold"])
            self.high_confidence = float(state["high_confidence"])
            self.calibrated = bool(state["calibrated"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"refusal gate state is malformed: {exc}") from None
        return self

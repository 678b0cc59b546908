"""Lesson 2, a sample solution: cosine similarity, top-k retrieval and reciprocal rank fusion."""

import math

import numpy as np


def cosine_similarity(a, b):
    """The cosine similarity of two vectors, or of every row of a matrix with a vector or rows.

    `a` and `b` are 1-D vectors or 2-D matrices (one vector per row), lists or arrays of finite
    numbers, with the same number of columns (at least one). Two vectors give a float; a matrix
    and a vector give one value per row of the matrix; two matrices give a (rows of a) x (rows
    of b) array. A zero vector has similarity 0.0 with everything. The inputs are left as they
    were. Anything else raises ValueError.
    """
    a_rows, a_is_vector = unit_rows(a, "a")
    b_rows, b_is_vector = unit_rows(b, "b")
    if a_rows.shape[1] != b_rows.shape[1]:
        raise ValueError(f"a has {a_rows.shape[1]} columns and b has {b_rows.shape[1]}")
    similarities = a_rows @ b_rows.T
    if a_is_vector and b_is_vector:
        return float(similarities[0, 0])
    if a_is_vector:
        return similarities[0]
    if b_is_vector:
        return similarities[:, 0]
    return similarities


def unit_rows(values, name):
    """`values` as rows of length 1 (zero rows stay zero), and whether it was a single vector."""
    array = np.array(values, dtype=float)  # a copy: dividing it leaves the caller's array alone
    if array.ndim not in (1, 2) or array.shape[-1] == 0:
        raise ValueError(f"{name} must be a vector or a matrix with at least one column")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds a value that is not a finite number")
    rows = np.atleast_2d(array)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0), array.ndim == 1


def top_k(query_vec, matrix, k):
    """The `k` rows of `matrix` most similar to `query_vec`, best first, as (index, score) pairs.

    Scores are cosine similarities; equal scores go to the lower row index first; a `k` larger
    than the number of rows returns every row. `query_vec` is a vector, `matrix` a matrix and
    `k` an int of at least 1 (not a bool); anything else raises ValueError.
    """
    if type(k) is not int or k < 1:
        raise ValueError("k must be an int of at least 1")
    if np.ndim(query_vec) != 1 or np.ndim(matrix) != 2:
        raise ValueError("query_vec must be a vector and matrix a matrix")
    scores = cosine_similarity(matrix, query_vec)
    order = np.argsort(-scores, kind="stable")[:k]  # a stable sort keeps tied rows in index order
    return [(int(index), float(scores[index])) for index in order]


def reciprocal_rank_fusion(rankings, k=60):
    """Fuse rankings (lists of ids, best first) into one list of (id, score) pairs, best first.

    An id's score is the sum of 1 / (k + rank) over the rankings that hold it, rank counted
    from 1. Equal scores keep the order in which the ids first appear when the rankings are
    read one after another, each from the top. `k` is an int of at least 0 (not a bool); an id
    that occurs twice in one ranking raises ValueError.
    """
    if type(k) is not int or k < 0:
        raise ValueError("k must be an int of at least 0")
    terms = {}  # id -> its 1 / (k + rank) terms; a dict remembers first appearance
    for ranking in rankings:
        if len(set(ranking)) != len(ranking):
            raise ValueError(f"a ranking holds an id more than once: {ranking!r}")
        for rank, item in enumerate(ranking, start=1):
            terms.setdefault(item, []).append(1 / (k + rank))
    # fsum adds exactly, so the same ranks in another order give exactly the same score
    scores = [(item, math.fsum(parts)) for item, parts in terms.items()]
    return sorted(scores, key=lambda pair: -pair[1])  # sorted() is stable: ties keep that order


if __name__ == "__main__":
    passages = np.array([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 1.0]])
    print(np.round(cosine_similarity(passages, passages), 2))
    print(top_k([1.0, 0.2, 0.0], passages, k=2))
    print(reciprocal_rank_fusion([["tanks", "gz-curve", "fuel"], ["gz-curve", "stability"]]))

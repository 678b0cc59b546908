"""Lesson 2: the embedding lab. Cosine similarity, top-k retrieval and reciprocal rank fusion.

Write the three functions below; each checkpoint's task gives the exact rules.
Run shows the demo at the bottom; Check tests one function at a time.
"""

import math

import numpy as np


def cosine_similarity(a, b):
    """The cosine similarity of two vectors, or of every row of a matrix with a vector or rows.

    Two vectors give a float; a matrix and a vector give one value per row of the matrix; two
    matrices give a (rows of a) x (rows of b) array. A zero vector has similarity 0.0 with
    everything. The inputs are left as they were. Anything else raises ValueError.
    """
    raise NotImplementedError


def top_k(query_vec, matrix, k):
    """The `k` rows of `matrix` most similar to `query_vec`, best first, as (index, score) pairs.

    Equal scores go to the lower row index first; a `k` larger than the number of rows
    returns every row. Anything else raises ValueError.
    """
    raise NotImplementedError


def reciprocal_rank_fusion(rankings, k=60):
    """Fuse rankings (lists of ids, best first) into one list of (id, score) pairs, best first.

    An id's score is the sum of 1 / (k + rank) over the rankings that hold it, rank counted
    from 1. Equal scores keep the order in which the ids first appear.
    """
    raise NotImplementedError


if __name__ == "__main__":
    passages = np.array([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 1.0]])
    print(np.round(cosine_similarity(passages, passages), 2))
    print(top_k([1.0, 0.2, 0.0], passages, k=2))
    print(reciprocal_rank_fusion([["tanks", "gz-curve", "fuel"], ["gz-curve", "stability"]]))

"""Hidden checks of lesson 2: one function per checkpoint, given the learner's namespace.

Inputs are built afresh (deep copies) for every call and expectations come from this file, so
a function that changes its arguments cannot move the goalposts; changing them is a failure.
"""

import copy
import math
import numbers

import numpy as np

from cellar.lessons.lesson import CheckFailure, brief, call, expect_value_error, learner_function

TOLERANCE = 1e-9


def fail(message):
    raise CheckFailure(message)


def reference_cosine(a, b):
    """Plain loops, row by row: independent of any NumPy trick the learner may use."""

    def one(u, v):
        norm_u, norm_v = math.sqrt(sum(x * x for x in u)), math.sqrt(sum(x * x for x in v))
        if norm_u == 0 or norm_v == 0:
            return 0.0
        return sum(x * y for x, y in zip(u, v)) / (norm_u * norm_v)

    return np.array([[one(u, v) for v in np.atleast_2d(b)] for u in np.atleast_2d(a)])


def call_on_copies(label, function, *args, **kwargs):
    given = copy.deepcopy(args)
    result = call(label, function, *given, **kwargs)
    if not all(map(unchanged, args, given)):
        fail(f"{label} changed an argument it was given; it must leave its input as it was")
    return result


def unchanged(before, after):
    if isinstance(before, np.ndarray):
        return isinstance(after, np.ndarray) and before.shape == after.shape and np.array_equal(before, after)
    return before == after


# --- checkpoint 1: cosine_similarity ------------------------------------------------------------


def check_cosine_similarity(namespace):
    cosine_similarity = learner_function(namespace, "cosine_similarity")
    vectors = [
        ([3.0, 4.0], [4.0, 3.0], 0.96, "two vectors"),
        ([1.0, 0.0], [0.0, 1.0], 0.0, "orthogonal vectors"),
        ([1.0, 2.0, 3.0], [2.0, 4.0, 6.0], 1.0, "a vector and twice that vector"),
        ([1.0, 0.0], [-1.0, 0.0], -1.0, "opposite vectors"),
        ([0.0, 0.0], [3.0, 4.0], 0.0, "a zero vector and [3, 4] (0.0 by the task's rule)"),
        ([0.0, 0.0], [0.0, 0.0], 0.0, "two zero vectors (0.0 by the task's rule)"),
        ([2, 0, 1], [1, 1, 0], 2 / math.sqrt(10), "two int vectors, given as lists"),
    ]
    for a, b, expected, what in vectors:
        label = f"cosine_similarity({a}, {b}) for {what}"
        for given_a, given_b in ((a, b), (np.array(a), np.array(b))):
            result = call_on_copies(label, cosine_similarity, given_a, given_b)
            if not isinstance(result, numbers.Real) or isinstance(result, bool):
                fail(f"{label} returned {brief(result)}; expected a float")
            if not math.isclose(result, expected, abs_tol=TOLERANCE):
                fail(f"{label} returned {brief(result)}; expected {float(expected)!r}")

    rng = np.random.default_rng(7)
    passages = rng.normal(size=(5, 8))
    passages[3] = 0.0  # a passage without any signal: similarity 0.0 with everything
    queries = rng.normal(size=(3, 8))
    shapes = [
        (
            "cosine_similarity(passages, query) for a 5x8 matrix with a zero row and a vector",
            passages,
            queries[0],
            (5,),
        ),
        ("cosine_similarity(query, passages) for a vector and a 5x8 matrix", queries[0], passages, (5,)),
        ("cosine_similarity(queries, passages) for a 3x8 and a 5x8 matrix", queries, passages, (3, 5)),
        ("cosine_similarity(passages, passages), the heat map of 5 passages", passages, passages, (5, 5)),
        ("cosine_similarity(rows, rows) for two rows given as lists", [[1, 2], [0, 0]], [[2, 4], [1, 0]], (2, 2)),
    ]
    for label, a, b, shape in shapes:
        expected = reference_cosine(a, b).reshape(shape)
        result = call_on_copies(label, cosine_similarity, a, b)
        if np.shape(result) != shape:
            fail(f"{label} returned an array of shape {np.shape(result)}; expected shape {shape}")
        values = np.asarray(result, dtype=float)
        if not np.allclose(values, expected, rtol=0, atol=TOLERANCE):
            where = np.unravel_index(np.argmax(np.abs(values - expected)), shape)
            fail(
                f"{label} has {values[where]:.6g} at position {tuple(map(int, where))}; expected {expected[where]:.6g}"
            )

    rejected = [
        ([1.0, 2.0], [1.0, 2.0, 3.0], "the vectors have 2 and 3 components"),
        ([[1.0, 2.0]], [[1.0, 2.0, 3.0]], "the matrices have 2 and 3 columns"),
        (np.ones((2, 2, 2)), [1.0, 2.0], "a is a 3-D array, neither a vector nor a matrix"),
        (5.0, [1.0], "a is a single number, not a vector"),
        ([], [], "the vectors have no components"),
        ([1.0, float("nan")], [1.0, 2.0], "a holds nan, which is not a finite number"),
        ([1.0, 2.0], [float("inf"), 0.0], "b holds inf, which is not a finite number"),
    ]
    for a, b, why in rejected:
        expect_value_error(f"cosine_similarity({brief(a, 30)}, {brief(b, 30)})", why, cosine_similarity, a, b)


# --- checkpoint 2: top_k ------------------------------------------------------------------------


def check_top_k(namespace):
    top_k = learner_function(namespace, "top_k")
    square = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]]
    half = 1 / math.sqrt(2)
    ties = [[0.0, 1.0], [1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]
    cases = [
        (
            "top_k([1, 0], matrix, 2) for the rows [1, 0], [0, 1], [1, 1], [-1, 0]",
            [1.0, 0.0],
            square,
            2,
            [(0, 1.0), (2, half)],
        ),
        (
            "top_k([1, 0], matrix, 10) for 4 rows (k larger than the number of rows)",
            [1.0, 0.0],
            square,
            10,
            [(0, 1.0), (2, half), (1, 0.0), (3, -1.0)],
        ),
        (
            "top_k([1, 0], matrix, 5) for the rows [0, 1], [1, 0], [0, 0], [1, 0], [2, 0] (ties go to the lower index)",
            [1.0, 0.0],
            ties,
            5,
            [(1, 1.0), (3, 1.0), (4, 1.0), (0, 0.0), (2, 0.0)],
        ),
        ("top_k([1, 0], matrix, 1) for the same five rows", [1.0, 0.0], ties, 1, [(1, 1.0)]),
        (
            "top_k(query, matrix, 3) for int arrays",
            np.array([0, 2]),
            np.array(square, dtype=int) * 3,
            3,
            [(1, 1.0), (2, half), (0, 0.0)],
        ),
    ]
    rng = np.random.default_rng(11)
    matrix = rng.normal(size=(40, 16))
    query = matrix[7] + rng.normal(scale=0.5, size=16)
    scores = reference_cosine(matrix, query)[:, 0]
    order = sorted(range(40), key=lambda index: -scores[index])
    cases.append(
        (
            "top_k(query, matrix, 12) for 40 random rows",
            query,
            matrix,
            12,
            [(index, scores[index]) for index in order[:12]],
        )
    )
    for label, query_vec, rows, k, expected in cases:
        expect_ranking(label, call_on_copies(label, top_k, query_vec, rows, k), expected)

    rejected = [
        (0, "k 0 is below 1"),
        (True, "k True is a bool, not an int"),
        (2.0, "k 2.0 is a float, not an int"),
        ("3", "k '3' is a string, not an int"),
    ]
    for k, why in rejected:
        expect_value_error(f"top_k([1, 0], matrix, {k!r})", why, top_k, [1.0, 0.0], square, k)
    shapes = [
        ([[1.0, 0.0]], square, "the query is a matrix, not a vector"),
        ([1.0, 0.0], [1.0, 0.0], "the matrix is a vector, not a matrix"),
        ([1.0, 0.0, 0.0], square, "the query has 3 components and the rows have 2"),
    ]
    for query_vec, rows, why in shapes:
        expect_value_error(f"top_k({brief(query_vec, 30)}, {brief(rows, 30)}, 2)", why, top_k, query_vec, rows, 2)


def expect_ranking(label, result, expected):
    """`result` must be the (id, score) pairs of `expected`, in that order."""
    if not isinstance(result, (list, tuple)):
        fail(f"{label} returned {brief(result)}; expected a list of (index, score) pairs")
    if len(result) != len(expected):
        fail(f"{label} returned {len(result)} pairs; expected {len(expected)}: {brief(expected)}")
    for position, (got, (item, score)) in enumerate(zip(result, expected)):
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            fail(f"{label}: item {position} is {brief(got)}; expected a pair ({item!r}, {score:.6g})")
        if got[0] != item or isinstance(got[0], bool):
            shown = [pair[0] for pair in result if isinstance(pair, (list, tuple)) and pair]
            fail(f"{label} ranks {brief(shown)}; expected {brief([pair[0] for pair in expected])}")
        if not isinstance(got[1], numbers.Real) or not math.isclose(got[1], score, abs_tol=TOLERANCE):
            fail(f"{label}: {item!r} has score {brief(got[1])}; expected {float(score)!r}")


# --- checkpoint 3: reciprocal_rank_fusion -------------------------------------------------------


def check_reciprocal_rank_fusion(namespace):
    fuse = learner_function(namespace, "reciprocal_rank_fusion")
    cases = [
        (
            "reciprocal_rank_fusion([['a', 'b', 'c'], ['c', 'a']])",
            [["a", "b", "c"], ["c", "a"]],
            {},
            [("a", 1 / 61 + 1 / 62), ("c", 1 / 63 + 1 / 61), ("b", 1 / 62)],
        ),
        (
            "reciprocal_rank_fusion([['x', 'y']]) with the default k=60",
            [["x", "y"]],
            {},
            [("x", 1 / 61), ("y", 1 / 62)],
        ),
        ("reciprocal_rank_fusion([['x', 'y']], k=0)", [["x", "y"]], {"k": 0}, [("x", 1.0), ("y", 0.5)]),
        (
            "reciprocal_rank_fusion([['bm25-first'], ['both', 'x'], ['y', 'both']], k=1)",
            [["bm25-first"], ["both", "x"], ["y", "both"]],
            {"k": 1},
            [("both", 1 / 2 + 1 / 3), ("bm25-first", 1 / 2), ("y", 1 / 2), ("x", 1 / 3)],
        ),
        (
            "reciprocal_rank_fusion([['a', 'b'], ['b', 'a']]) (a tie: a appears first)",
            [["a", "b"], ["b", "a"]],
            {},
            [("a", 1 / 61 + 1 / 62), ("b", 1 / 62 + 1 / 61)],
        ),
        (
            "reciprocal_rank_fusion([['d', 'c'], ['b', 'a']]) (ties keep the order of first appearance)",
            [["d", "c"], ["b", "a"]],
            {},
            [("d", 1 / 61), ("b", 1 / 61), ("c", 1 / 62), ("a", 1 / 62)],
        ),
        (
            "reciprocal_rank_fusion([[3, 1, 2], [2]]) with int ids",
            [[3, 1, 2], [2]],
            {},
            [(2, 1 / 63 + 1 / 61), (3, 1 / 61), (1, 1 / 62)],
        ),
        ("reciprocal_rank_fusion([])", [], {}, []),
        ("reciprocal_rank_fusion([[], ['a']])", [[], ["a"]], {}, [("a", 1 / 61)]),
    ]
    for label, rankings, settings, expected in cases:
        expect_ranking(label, call_on_copies(label, fuse, rankings, **settings), expected)

    rejected = [
        ({"k": True}, [["a"]], "k True is a bool, not an int"),
        ({"k": -1}, [["a"]], "k -1 is below 0"),
        ({"k": 60.0}, [["a"]], "k 60.0 is a float, not an int"),
        ({"k": "60"}, [["a"]], "k '60' is a string, not an int"),
        ({}, [["a", "b", "a"]], "the id 'a' occurs twice in one ranking"),
    ]
    for settings, rankings, why in rejected:
        shown = ", ".join([repr(rankings)] + [f"{key}={value!r}" for key, value in settings.items()])
        expect_value_error(f"reciprocal_rank_fusion({shown})", why, fuse, rankings, **settings)

"""Retrieval: chunk records in, a shard on disk, and answers to questions out.

analysis     text -> BM25 terms (Unicode, code identifiers, numbers, English + Dutch stems)
bm25         term lists -> a precomputed sparse BM25 score matrix
embedding    text -> a vector of the static model that ships in models/ (NumPy only)
distill      all-MiniLM-L6-v2 -> that static model (`cellar model distill`, needs torch)
bilingual    FreeDict nld-eng -> a Dutch -> English term table (models/nld-eng/, GPL-2+); a Dutch
             question -> its English reading
index        chunk records (+ a re-render report) -> an Index in memory
shard        an Index <-> files on disk, verified against the manifest's hashes
search       a question -> the answer contract (cellar.records.Answer), or a refusal
answer_cell  a question and a notebook's scored chunks -> its hits, the answer cell first
fusion       rankings -> one ranking by reciprocal rank
evaluation   a gold set -> a scorecard, and the refusal calibration
"""

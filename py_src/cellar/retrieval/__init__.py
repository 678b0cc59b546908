"""Retrieval: chunk records in, a shard on disk, and answers to questions out.

analysis     text -> BM25 terms (Unicode, code identifiers, numbers, English + Dutch stems)
bm25         term lists -> a precomputed sparse BM25 score matrix
embedding    text -> a vector of the static model that ships in models/ (NumPy only)
distill      all-MiniLM-L6-v2 -> that static model (`cellar model distill`, needs torch)
bilingual    FreeDict nld-eng -> a Dutch -> English term table (models/nld-eng/, GPL-2+), with a
             technical one laid over it (models/nld-eng-technical/); a Dutch question -> its English
             reading
incremental  archive files -> each file's records, terms and vectors, cached by content hash
index        chunk records (+ a re-render report) -> an Index in memory
ivf          vectors -> k-means clusters, and how many a query probes
packing      a shard's binary files: a JSON header and raw arrays, gzip without a time stamp
table        the notebook table, packed by columns; filters tested on its distinct values
sharding     an Index -> the shard's files as bytes (term partitions, clusters, containers)
publish      a shard written aside, verified, switched atomically; the lock
shard        the reader the tab loads: a shard's files checked and read on demand
sources      what a search reads: an in-memory Index, or a shard fetched piece by piece
commonness   a word -> how common it is in everyday English or Dutch (models/word-frequency/, from
             wordfreq, CC BY-SA 4.0), so that a missing everyday word weighs less in the refusal
search       a question -> the answer contract (cellar.records.Answer), or a refusal
answer_cell  a question and a notebook's scored chunks -> its hits, the answer cell first
blocks       a question and a document's scored blocks -> the block that answers first; the
             documents' refusal evidence (known words, the asked quantity's units)
quantities   a question -> the kind of quantity it asks (unit families); a text -> the kinds it states
fusion       rankings -> one ranking by reciprocal rank
evaluation   a gold set -> a scorecard, and the refusal calibration
"""

"""NEFF fuzzing: real NEFFs mutated at every layer, run crash- and hang-isolated.

``python -m torchneuron.fuzz.neff`` (see ``__main__``) takes a corpus of NEFFs our
own compiler makes (``corpus``: an MLP with weights, schedule and memory plan, the
same uncompressed, an indexing program with a run-time check, eager op NEFFs) and
mutates them (``cases.MUTATORS``): header fields, tar structure (member headers,
pax records, links, duplicates, truncation), the gzip stream (flips, trailing data,
bombs), JSON members (structured values at random paths, bytes), weights, program
bytes, and a program rewritten to call code outside the allowlist
(``forbidden-op``). After a mutation, what the reader checks first is re-signed
(``pack``: weight sha256, tar, gzip, header hash and uuid), so the deep checks run.

Each case runs in a long-lived worker process (``worker``, ``pool``): read_neff,
describe, load_neff, execute on zero or random inputs, unload, and for every n-th
case ``neuronc inspect`` and ``neuronc run``. The outcome is ``refused`` (NeffError),
``ran``, ``crash`` (the worker died), ``hang`` (no answer within the time limit),
``leak`` (any other exception) or ``forbidden-executed``; ``report`` prints the
table and saves a reproducer of every failure. Case ``i`` of seed ``s`` is always
the same bytes (for the same corpus).
"""

"""The systems under test and their generators.

`REFERENCE_RAG` names the built-in reference RAG: the only system whose retrieval and answers come
from the pipeline's own embedder and generator (a callable system, logged answers and the
dataset's runs are made without them).
"""

REFERENCE_RAG = "reference-rag"

"""Corpus reading, passages, embedding, FAISS and BM25 indexes, and hybrid search."""

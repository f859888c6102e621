"""Collections, documents and their versions, passages, ingest, the search indexes (indexing and crash repair) and as-of (valid time / system time) reads."""

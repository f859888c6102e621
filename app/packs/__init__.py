"""Context packs: hybrid retrieval legs, fusion, as-of resolution, dedup and budget packing; the NDJSON/JSON wire form of pack events."""

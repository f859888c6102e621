"""Knowledge networks: mapping files, loading, the in-memory store, instance queries and semantic recall."""

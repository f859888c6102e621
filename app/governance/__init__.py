"""Who may call what: tokens and principals (auth), the operation registry, responsibility boundaries, the governed-call adapter, the response envelope and the registry/schema contract check."""

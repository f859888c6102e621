"""HTTP transport: the GraphQL gate, GraphiQL and its static assets, WebSocket transport, the NDJSON pack stream and decisions routes, enveloped edge errors."""

"""GraphQL layer: Strawberry types and resolvers. No SQL, scoring or permission logic here."""

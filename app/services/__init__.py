"""One service module per capability; services own the rules, resolvers only convert."""

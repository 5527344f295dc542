"""One module per API: each describes its request and response messages for every version."""

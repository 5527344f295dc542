"""Authentication and authorization, pure: who a TLS peer is and what it may do.

- `acl`: Kafka's ACL model (resource, operation, permission and pattern types with their wire
  codes), filters, CreateAcls/DeleteAcls validation, metadata records <-> ACLs.
- `authorizer`: StandardAuthorizer over an immutable, indexed ACL snapshot that replaying records
  replaces; super users, allow-if-no-ACL, the per-API helpers (cluster, topics to create).
- `dn`: a certificate's subject exactly as Java's X500Principal.getName() prints it (RFC 2253).
- `principal_mapping`: `ssl.principal.mapping.rules` (SslPrincipalMapper), Java regex semantics.
- `principal`: the connection's principal, "User:ANONYMOUS" without a certificate.

Rules: nothing here does I/O or keeps time; the shell establishes the peer (TLS) and its address,
calls these functions, and maps verdicts and errors to the wire. Each module's docstring states
its rules and where they come from in Kafka 3.9.
"""

"""Tests of tenants, members, keys, settings, OIDC identities and application logins
(vera_client/api/access)."""

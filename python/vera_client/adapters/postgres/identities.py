"""The gateway's calls on external (OIDC) identities: the principal an
identity was provisioned as, and provisioning a first-seen one. Only
vera_gateway (and operators) may run them (sql/functions/220_identities.sql),
on a connection that authenticates no caller (run them as Operator()): the
gateway verified the token itself and vouches for what it maps to."""

from __future__ import annotations

from uuid import UUID

from vera_client.adapters.postgres.calls import Call, scalar


def principal_for_identity(issuer: str, subject: str) -> Call[UUID | None]:
    """The principal of (issuer, subject), or None when never provisioned.

    PrincipalDisabledError (VA006) when that principal is disabled."""
    return Call("principal_for_identity", {"issuer": issuer, "subject": subject}, scalar)


def provision_identity(
    issuer: str, subject: str, *, display_name: str, email: str | None, group_id: str, role: str
) -> Call[UUID]:
    """Provision (issuer, subject) as a user holding `role` (viewer, member or
    admin) in `group_id`, exactly once; concurrent first calls all get the
    principal of the one that committed first."""
    params = {
        "issuer": issuer,
        "subject": subject,
        "display_name": display_name,
        "email": email,
        "group": group_id,
        "role": role,
    }
    return Call("provision_identity", params, scalar)

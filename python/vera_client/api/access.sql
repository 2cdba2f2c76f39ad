-- Named queries of vera_client.api.access: tenants, members, API keys, settings, and the authentication every transaction starts with.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: authenticate
-- Authenticates an API key for the current transaction; returns the principal.
select vera.authenticate(%(key)s);

-- name: authenticate_principal
-- A trusted process (the worker) vouches for a principal for this transaction.
select vera.authenticate_principal(%(principal)s);

-- name: whoami
select *
from vera.whoami();

-- name: create_group
select vera.create_group(%(parent)s, %(kind)s::vera.group_kind, %(name)s);

-- name: create_principal
select vera.create_principal(%(group)s, %(kind)s::vera.principal_kind, %(name)s, %(role)s::vera.member_role,
                             %(email)s);

-- name: set_member_role
select vera.set_member_role(%(group)s, %(principal)s, %(role)s::vera.member_role);

-- name: remove_member
select vera.remove_member(%(group)s, %(principal)s);

-- name: create_api_key
select * from vera.create_api_key(%(name)s, %(expires_at)s, %(principal)s);

-- name: revoke_api_key
select vera.revoke_api_key(%(key)s);

-- name: list_api_keys
select * from vera.list_api_keys();

-- name: disable_principal
select vera.disable_principal(%(principal)s, %(reason)s);

-- name: enable_principal
select vera.enable_principal(%(principal)s, %(reason)s);

-- name: list_member_keys
select * from vera.list_member_keys(%(group)s, %(principal)s);

-- name: revoke_member_key
select vera.revoke_member_key(%(group)s, %(key)s);

-- name: setting
select vera.setting(%(group)s, %(name)s);

-- name: set_setting
select vera.set_setting(%(group)s, %(name)s, %(value)s);

-- name: principal_for_identity
-- Gateway: the principal an external identity was provisioned as, or null.
select vera.principal_for_identity(%(issuer)s, %(subject)s);

-- name: provision_identity
-- Gateway: provisions a first-seen external identity as a user with a role in a group, exactly once.
select vera.provision_identity(%(issuer)s, %(subject)s, %(display_name)s, %(email)s, %(group)s,
                               %(role)s::vera.member_role);

-- External identities: an OIDC subject (issuer, subject) and the principal it
-- was provisioned as the first time the gateway saw one of its tokens. Like
-- principals, identity spans tenants, so the table carries no group_id; it is
-- read and written only through the definer functions of
-- sql/functions/220_identities.sql, which only the gateway may call.
set role vera_owner;

create table vera.external_identities (
    issuer       text not null
                 constraint external_identities_issuer_length check (char_length(issuer) between 1 and 2048),
    -- OpenID Connect Core 1.0, 2: a subject is at most 255 ASCII characters
    subject      text not null
                 constraint external_identities_subject_length check (char_length(subject) between 1 and 255),
    principal_id uuid not null references vera.principals (principal_id) on delete cascade,
    created_at   timestamptz not null default now(),
    primary key (issuer, subject)
);
create index external_identities_principal_idx on vera.external_identities (principal_id);
comment on table vera.external_identities is
    'OIDC subjects (issuer, subject) and the principal each was provisioned as, just in time';

reset role;

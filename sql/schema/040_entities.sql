-- Entities, their aliases (the resolution ladder matches alias_norm), and
-- the ontology of predicates.
set role vera_owner;

create table vera.entities (
    group_id       text not null references vera.groups (group_id),
    entity_id      uuid not null default gen_random_uuid(),
    canonical_name text not null
                   constraint entities_name_length check (char_length(btrim(canonical_name)) between 1 and 500),
    entity_type    text,
    -- provisional: linked by a semantic near-match that awaits the equivalence judge
    status         text not null default 'active'
                   constraint entities_status_known check (status in ('active', 'provisional', 'merged')),
    merged_into    uuid,
    name_embedding vector,
    created_at     timestamptz not null default now(),
    primary key (group_id, entity_id),
    foreign key (group_id, merged_into) references vera.entities (group_id, entity_id),
    constraint entities_merge_target check ((status = 'merged') = (merged_into is not null))
);
comment on table vera.entities is 'Things facts are about; canonical name, type and name embedding';

create table vera.entity_aliases (
    group_id   text not null,
    entity_id  uuid not null,
    alias      text not null constraint entity_aliases_alias_length check (char_length(alias) between 1 and 500),
    -- written from vera.normalize_name(alias): case- and width-folded, diacritics kept
    alias_norm text not null constraint entity_aliases_norm_nonempty check (alias_norm <> ''),
    created_at timestamptz not null default now(),
    primary key (group_id, entity_id, alias_norm),
    foreign key (group_id, entity_id) references vera.entities (group_id, entity_id) on delete cascade
);
create index entity_aliases_norm_idx on vera.entity_aliases (group_id, alias_norm);
-- trigram probes within one group: btree_gin puts the group into the same index,
-- so a probe reads only the group's postings of the name's trigrams (under 1 ms
-- at 10,000 aliases). The group compares under "C", as only vera.similar_aliases
-- asks: no btree matches its condition, so this is its only index path (a bitmap
-- scan of the group through a btree compared the name with every alias; issue 32).
-- fastupdate off: no pending list of new aliases that every probe reads in full.
create index entity_aliases_group_trgm_idx on vera.entity_aliases
    using gin (group_id collate "C", alias_norm gin_trgm_ops) with (fastupdate = off);
-- a name with digits links only to an alias with the same numbers: its probe reads those
-- here, where the trigram index rechecked every sibling that differs in its numbers alone
-- (page 1234, page 1235); only aliases with digits, the group under "C" as above
create index entity_aliases_group_numbers_idx on vera.entity_aliases
    (group_id collate "C", regexp_replace(alias_norm, '[^0-9]+', ' ', 'g'))
    where alias_norm ~ '[0-9]';
comment on table vera.entity_aliases is 'Names an entity is known by, normalised for exact and fuzzy matching';

create table vera.predicates (
    group_id    text not null references vera.groups (group_id),
    name        text not null
                constraint predicates_upper_snake check (name ~ '^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$' and char_length(name) <= 100),
    -- functional: one value at a time per subject (a new value supersedes); multi: values coexist
    cardinality vera.predicate_cardinality not null default 'multi',
    description text,
    created_at  timestamptz not null default now(),
    primary key (group_id, name)
);
comment on table vera.predicates is 'The ontology of a group: UPPER_SNAKE predicates, functional or multi-valued';

reset role;
